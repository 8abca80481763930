"""What the page boots: its files, how they are served, the vendored Pyodide, the page's Python
compiled, the memory snapshot, and the Node that makes both."""
