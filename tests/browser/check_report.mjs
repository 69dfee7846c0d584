// Opens a fusebench HTML report in headless Chromium through the DevTools protocol (over
// --remote-debugging-pipe: no port, no WebSocket library, nothing downloaded) and reports,
// as one JSON object on stdout, what a reader's browser saw: console errors, exceptions,
// network requests, dialogs, charts drawn, the layer table expanding, a hover tooltip,
// page-level horizontal overflow at 1400 px. Saves screenshots into OUT_DIR.
// test_report_browser.cpp asserts on the JSON.
//
//   node check_report.mjs CHROMIUM REPORT.html OUT_DIR
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [chromium, reportPath, outDir] = process.argv.slice(2);
if (!chromium || !reportPath || !outDir) {
  console.error('usage: node check_report.mjs CHROMIUM REPORT.html OUT_DIR');
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), 'fusebench-chromium-'));
const browser = spawn(chromium, [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--hide-scrollbars', '--remote-debugging-pipe', `--user-data-dir=${profile}`, 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderr = '';
browser.stdio[2].on('data', d => { stderr += d; });

const pending = new Map();
const listeners = [];
let nextId = 1;
let buffer = '';
browser.stdio[4].on('data', chunk => {
  buffer += chunk.toString('utf8');
  let end;
  while ((end = buffer.indexOf('\0')) >= 0) {
    const msg = JSON.parse(buffer.slice(0, end));
    buffer = buffer.slice(end + 1);
    if (msg.id && pending.has(msg.id)) {
      const { ok, fail } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) fail(new Error(JSON.stringify(msg.error))); else ok(msg.result);
    } else if (msg.method) {
      for (const l of listeners) l(msg);
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  browser.stdio[3].write(JSON.stringify({ id, method, params, sessionId }) + '\0');
  return new Promise((ok, fail) => pending.set(id, { ok, fail }));
}
function waitFor(method, sessionId) {
  return new Promise(ok => {
    const l = msg => {
      if (msg.method === method && msg.sessionId === sessionId) {
        listeners.splice(listeners.indexOf(l), 1);
        ok(msg.params);
      }
    };
    listeners.push(l);
  });
}
const sleep = ms => new Promise(ok => setTimeout(ok, ms));

const result = { console_errors: [], exceptions: [], log_errors: [], requests: [], dialogs: [] };
const watchdog = setTimeout(() => {
  console.log(JSON.stringify({ ...result, fatal: 'timed out after 60 s', stderr: stderr.slice(-2000) }));
  browser.kill('SIGKILL');
  process.exit(1);
}, 60000);

try {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId: s } = await send('Target.attachToTarget', { targetId, flatten: true });
  listeners.push(msg => {
    if (msg.sessionId !== s) return;
    const p = msg.params;
    if (msg.method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert'))
      result.console_errors.push(p.args.map(a => a.value ?? a.description).join(' '));
    if (msg.method === 'Runtime.exceptionThrown') result.exceptions.push(p.exceptionDetails.exception?.description ?? p.exceptionDetails.text);
    if (msg.method === 'Log.entryAdded' && p.entry.level === 'error') result.log_errors.push(p.entry.text);
    if (msg.method === 'Network.requestWillBeSent' && !/^(file|data|about):/.test(p.request.url)) result.requests.push(p.request.url);
    if (msg.method === 'Page.javascriptDialogOpening') {
      result.dialogs.push(p.message);
      send('Page.handleJavaScriptDialog', { accept: true }, s);
    }
  });
  for (const domain of ['Runtime', 'Log', 'Network', 'Page']) await send(domain + '.enable', {}, s);
  await send('Emulation.setDeviceMetricsOverride', { width: 1400, height: 1000, deviceScaleFactor: 1, mobile: false }, s);
  const loaded = waitFor('Page.loadEventFired', s);
  await send('Page.navigate', { url: pathToFileURL(resolve(reportPath)).href }, s);
  await loaded;
  await sleep(200);
  const evaluate = async expr => {
    const r = await send('Runtime.evaluate', { expression: expr, returnByValue: true, awaitPromise: true }, s);
    if (r.exceptionDetails) throw new Error('evaluate: ' + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  };
  const shot = async name => {
    const { data } = await send('Page.captureScreenshot', { format: 'png' }, s);
    writeFileSync(join(outDir, name), Buffer.from(data, 'base64'));
    result.screenshots = (result.screenshots ?? []).concat(join(outDir, name));
  };

  Object.assign(result, await evaluate(`({
    page_overflow_px: document.documentElement.scrollWidth - window.innerWidth,
    script_elements: document.querySelectorAll('script').length,
    textarea_elements: document.querySelectorAll('textarea').length,
    banner: document.getElementById('banner') ? document.getElementById('banner').textContent : null,
    cases: document.querySelectorAll('details.case').length,
  })`));
  await shot('report_top.png');

  // Open the first case with a profile and look at it as a reader would.
  await evaluate(`(() => {
    const first = [...document.querySelectorAll('details.case')].find(d => d.querySelector('svg[aria-label^="time per module"]')) ||
                  document.querySelector('details.case');
    location.hash = first.id;
    return first.id;
  })()`);
  await sleep(300);
  await shot('report_case.png');
  await evaluate(`document.querySelector(':target h4:nth-of-type(5), :target table.layers').scrollIntoView()`);
  await sleep(100);
  await shot('report_engine.png');

  // Every case open: every chart must have drawn something.
  Object.assign(result, await evaluate(`(async () => {
    for (const d of document.querySelectorAll('details.case')) d.open = true;
    // Charts draw on the toggle events; on a loaded machine that can take a while.
    for (let waited = 0; waited < 10000; waited += 100) {
      if ([...document.querySelectorAll('svg.history')].every(c => c.childElementCount > 0)) break;
      await new Promise(ok => setTimeout(ok, 100));
    }
    const charts = [...document.querySelectorAll('svg.chart')];
    const empty = charts.filter(c => c.childElementCount === 0 || c.getBBox().width === 0);
    return { charts: charts.length, history_charts: document.querySelectorAll('svg.history').length,
             empty_charts: empty.map(c => (c.closest('details') || {}).id + ' ' + c.getAttribute('aria-label')) };
  })()`));

  // The layer table expands, and its source-node lists open.
  Object.assign(result, await evaluate(`(() => {
    const button = document.querySelector('button.expand');
    if (!button) return { layer_rows_before: 0, layer_rows_after: 0 };
    const table = document.getElementById(button.dataset.target);
    const visible = () => [...table.tBodies[0].rows].filter(r => getComputedStyle(r).display !== 'none').length;
    const before = visible();
    button.click();
    const sources = table.querySelector('details.sources');
    if (sources) sources.open = true;
    return { layer_rows_before: before, layer_rows_after: visible(), button_text: button.textContent,
             sources_open: sources ? sources.querySelectorAll('li').length : 0 };
  })()`));

  // Hovering a history chart shows its run.
  const box = await evaluate(`(() => {
    const svg = document.querySelector('svg.history');
    svg.scrollIntoView({ block: 'center' });
    const r = svg.getBoundingClientRect();
    return { x: r.left + r.width * 0.6, y: r.top + r.height * 0.5 };
  })()`);
  await send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: box.x, y: box.y }, s);
  result.tooltip = await evaluate(`(async () => {
    const t = document.getElementById('fb-tip');
    for (let waited = 0; waited < 5000 && getComputedStyle(t).display === 'none'; waited += 50)
      await new Promise(ok => setTimeout(ok, 50));
    return getComputedStyle(t).display !== 'none' ? t.textContent : '';
  })()`);
  await shot('report_hover.png');
  await send('Browser.close');
} catch (e) {
  result.fatal = String(e && e.stack || e);
  result.stderr = stderr.slice(-2000);
}
clearTimeout(watchdog);
console.log(JSON.stringify(result));
if (browser.exitCode === null && browser.signalCode === null) {
  const exited = new Promise(ok => browser.once('exit', ok));
  browser.kill('SIGKILL');
  await exited;
}
try { rmSync(profile, { recursive: true, force: true }); } catch { /* a leftover temp folder is harmless */ }
process.exit(result.fatal ? 1 : 0);
