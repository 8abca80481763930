import statistics, sys, tempfile, json
from bench.mcp_call import served, ECHO, ECHO_PATH, ECHO_TEXT, launch, ReactorPage, connect_page
from playwright.sync_api import sync_playwright
WORKER_ECHO = """async ([path, calls, text]) => {
  const address = new URL(path, location.href); address.protocol = "ws:";
  const code = `onmessage = async ({data}) => { const [url, calls, text] = data; const s = new WebSocket(url);
    await new Promise(r => s.onopen = r); const times = [];
    for (let i = 0; i < calls; i++) { const t = performance.now(); const h = new Promise(r => s.onmessage = r); s.send(text); await h; times.push(performance.now() - t); }
    s.close(); postMessage(times); }`;
  const w = new Worker(URL.createObjectURL(new Blob([code], {type: "text/javascript"})));
  const times = await new Promise(r => { w.onmessage = ({data}) => r(data); w.postMessage([address.href, calls, text]); });
  w.terminate(); return times;
}"""
with tempfile.TemporaryDirectory() as data, served(data, True) as url, sync_playwright() as pw:
    class Live: pass
    live = Live(); live.url = url
    b = launch(pw); page = b.new_page(); ReactorPage(page, live).open()
    m, w = [], []
    for r in range(8):
        m += page.evaluate(ECHO, [ECHO_PATH, 50, ECHO_TEXT])
        w += page.evaluate(WORKER_ECHO, [ECHO_PATH, 50, ECHO_TEXT])
    print("main echo p50", statistics.median(m[50:]), "worker echo p50", statistics.median(w[50:]))
    b.close()
