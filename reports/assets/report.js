// The report's script, inlined into every report (see reports/CMakeLists.txt). It draws
// each case's history charts as SVG from the page's JSON data when the case is opened (200
// cases x 365 runs would be too many elements to draw up front), shows a point's run on
// hover, opens a case a link points at, and expands layer tables. Text from the data only
// ever goes in through textContent, so no stored name is parsed as HTML.
'use strict';
(function () {
  const SVG = 'http://www.w3.org/2000/svg';
  const data = JSON.parse(document.getElementById('fb-data').textContent);
  // Per metric: [value, low, high] columns of a point (after the run index).
  const METRICS = [
    { title: 'Engine median', unit: 'ms', color: '#0969da', col: 1 },
    { title: 'Reference median', unit: 'ms', color: '#bc4c00', col: 4 },
    { title: 'Speedup (reference / engine)', unit: '×', color: '#1a7f37', col: 7 },
  ];

  function el(tag, attrs, parent, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  function niceTicks(lo, hi, target) {
    if (!(hi > lo)) { hi = lo + 1; }
    const raw = (hi - lo) / target;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    let step = 10 * mag;
    for (const m of [1, 2, 5, 10]) { if (raw <= m * mag * 1.0000001) { step = m * mag; break; } }
    const ticks = [];
    for (let t = Math.ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) ticks.push(t);
    return { ticks: ticks, step: step };
  }

  function fmt(v) {
    if (v === null || !isFinite(v)) return '—';
    const a = Math.abs(v);
    return v.toFixed(a < 1 ? 4 : a < 10 ? 3 : a < 100 ? 2 : 1);
  }

  const tip = document.createElement('div');
  tip.id = 'fb-tip';
  document.body.appendChild(tip);

  function drawHistory(svg, c, m) {
    const spec = METRICS[m];
    const W = 420, H = 220, L = 58, R = 14, T = 26, B = 38, PW = W - L - R, PH = H - T - B;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('font-family', 'system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif');
    svg.setAttribute('font-size', '11');
    const pts = c.points.filter(p => p[spec.col] !== null && p[spec.col] > 0);
    el('text', { x: 8, y: 16, 'font-size': 13, 'font-weight': 600, fill: '#1f2328' }, svg,
       spec.title + ' (' + spec.unit + '), last ' + data.runs.length + ' runs');
    if (pts.length === 0) {
      el('text', { x: L, y: T + PH / 2, fill: '#656d76' }, svg, 'no values in this window');
      return;
    }
    let lo = Infinity, hi = -Infinity;
    for (const p of pts) {
      for (const k of [0, 1, 2]) {
        const v = p[spec.col + k];
        if (v !== null && v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      }
    }
    const pad = Math.max((hi - lo) * 0.08, hi * 0.01);
    const yt = niceTicks(Math.max(0, lo - pad), hi + pad, 5);
    const y0 = Math.min(yt.ticks[0], lo), y1 = Math.max(yt.ticks[yt.ticks.length - 1], hi);
    const n = Math.max(1, data.runs.length - 1);
    const px = i => L + (data.runs.length === 1 ? PW / 2 : i / n * PW);
    const py = v => T + PH - (v - y0) / (y1 - y0) * PH;
    const decimals = yt.step >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(yt.step) - 1e-9));
    for (const t of yt.ticks) {
      if (t < y0 || t > y1) continue;
      el('line', { x1: L, x2: L + PW, y1: py(t), y2: py(t), stroke: '#eaeef2' }, svg);
      el('text', { x: L - 5, y: py(t) + 4, 'text-anchor': 'end', fill: '#1f2328' }, svg, t.toFixed(decimals));
    }
    el('line', { x1: L, x2: L, y1: T, y2: T + PH, stroke: '#656d76' }, svg);
    el('line', { x1: L, x2: L + PW, y1: T + PH, y2: T + PH, stroke: '#656d76' }, svg);
    // Run ids along the bottom, about six of them.
    const every = Math.max(1, Math.ceil(data.runs.length / 6));
    for (let i = 0; i < data.runs.length; i += every) {
      el('text', { x: px(i), y: T + PH + 14, 'text-anchor': 'middle', fill: '#1f2328' }, svg, String(data.runs[i][0]));
    }
    el('text', { x: L + PW / 2, y: H - 4, 'text-anchor': 'middle', fill: '#656d76' }, svg, 'run id (oldest → newest)');
    el('text', { transform: 'translate(12 ' + (T + PH / 2) + ') rotate(-90)', 'text-anchor': 'middle', fill: '#656d76' },
       svg, spec.unit);
    // The 95% interval of each run as a band, then the line.
    const band = pts.filter(p => p[spec.col + 1] > 0 && p[spec.col + 2] > 0);
    if (band.length > 1) {
      const up = band.map(p => px(p[0]) + ',' + py(p[spec.col + 2]));
      const down = band.slice().reverse().map(p => px(p[0]) + ',' + py(p[spec.col + 1]));
      el('polygon', { points: up.concat(down).join(' '), fill: spec.color, 'fill-opacity': 0.15, stroke: 'none' }, svg);
    }
    el('polyline', { points: pts.map(p => px(p[0]) + ',' + py(p[spec.col])).join(' '), fill: 'none',
                     stroke: spec.color, 'stroke-width': 1.6 }, svg);
    for (const p of pts) {
      // Noisy runs hollow: their interval did not reach the timing target.
      el('circle', { cx: px(p[0]), cy: py(p[spec.col]), r: 2.4, fill: p[10] ? '#fff' : spec.color, stroke: spec.color }, svg);
    }
    // Change points that `fusebench history` finds on this series.
    for (const ch of c.changes) {
      if (ch[0] !== m) continue;
      const p = c.points[ch[1]];
      const x = px(p[0]);
      el('line', { x1: x, x2: x, y1: T, y2: T + PH, stroke: '#cf222e', 'stroke-width': 1.5, 'stroke-dasharray': '5 3' }, svg);
      const label = (ch[2] >= 0 ? '+' : '') + (100 * ch[2]).toFixed(1) + '% from run ' + data.runs[p[0]][0];
      el('text', { x: x > L + PW / 2 ? x - 4 : x + 4, y: T + 10, 'text-anchor': x > L + PW / 2 ? 'end' : 'start',
                   fill: '#cf222e', 'font-weight': 600 }, svg, label);
    }
    // Hover: the nearest run's point, with its run, commit, date, host and figures.
    const marker = el('circle', { r: 5, fill: 'none', stroke: '#1f2328', 'stroke-width': 2, visibility: 'hidden' }, svg);
    const hit = el('rect', { x: L, y: T, width: PW, height: PH, fill: 'transparent' }, svg);
    hit.addEventListener('mousemove', ev => {
      const box = svg.getBoundingClientRect();
      const x = (ev.clientX - box.left) * W / box.width;
      let best = pts[0];
      for (const p of pts) { if (Math.abs(px(p[0]) - x) < Math.abs(px(best[0]) - x)) best = p; }
      const run = data.runs[best[0]];
      marker.setAttribute('cx', px(best[0]));
      marker.setAttribute('cy', py(best[spec.col]));
      marker.setAttribute('visibility', 'visible');
      tip.textContent = 'run ' + run[0] + '  ' + run[1] + '\ncommit ' + run[2] + '  host ' + run[3] + '\n' +
        spec.title + ' ' + fmt(best[spec.col]) + ' ' + spec.unit + '  [' + fmt(best[spec.col + 1]) + ', ' +
        fmt(best[spec.col + 2]) + '] 95%' + (best[10] ? '\nnoisy: stopped before its timing target' : '');
      tip.style.display = 'block';
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8) + 'px';
      tip.style.top = (ev.clientY + 14) + 'px';
    });
    hit.addEventListener('mouseleave', () => { tip.style.display = 'none'; marker.setAttribute('visibility', 'hidden'); });
  }

  function drawCase(details) {
    if (details.dataset.drawn) return;
    details.dataset.drawn = '1';
    for (const svg of details.querySelectorAll('svg.history')) {
      drawHistory(svg, data.cases[Number(svg.dataset.case)], Number(svg.dataset.metric));
    }
  }

  for (const d of document.querySelectorAll('details.case')) {
    d.addEventListener('toggle', () => { if (d.open) drawCase(d); });
    if (d.open) drawCase(d);
  }

  // A link to a case (#case-N), from the verdict tables or another page, opens it.
  function openTarget() {
    const target = location.hash.length > 1 ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    if (target && target.tagName === 'DETAILS') {
      target.open = true;
      drawCase(target);
      target.scrollIntoView();
    }
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();

  for (const b of document.querySelectorAll('button.expand')) {
    b.addEventListener('click', () => {
      const all = document.getElementById(b.dataset.target).classList.toggle('all');
      b.textContent = all ? b.dataset.less : b.dataset.more;
    });
  }
})();
