"""The server's plugins: which are on, the AI Tool and UI plugin records, and what each server
plugin is handed."""
