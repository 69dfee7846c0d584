// Times ONNX Runtime (npm onnxruntime-node, CPU) side by side with fusebench's engine on the
// same ONNX files, thread count and input values. Not a build, run or test dependency of
// fusebench: scripts/bench_ort.sh installs onnxruntime-node into build/ort-node and runs this.
//
// Per model and batch, in rounds (so drifts in machine load hit every runtime alike):
//   ORT graphOptimizationLevel 'all', ORT 'disabled', then `fusebench run` of one engine case
//   (aggressive; in block alternation, so the engine too runs in a loop of its own, unless
//   --alternation iteration). The inputs are the ones fusebench itself uses (`fusebench exec --save-inputs`),
//   and ORT's outputs are checked against fusebench's before any timing.
//
// node scripts/bench_ort.mjs --fusebench build/fusebench --ort-dir build/ort-node \
//   --model NAME=PATH [--model ...] [--batch 1,8] [--threads 2] [--rounds 3] [--seconds 2]
//   [--alternation block|iteration] [--winograd on|off]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

function parseArgs(argv) {
  const a = { models: [], batch: [1, 8], threads: 2, rounds: 3, seconds: 2, fusebench: 'build/fusebench', ortDir: 'build/ort-node', fusion: 'aggressive',
    alternation: 'block', winograd: 'on' };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`${k}: missing value`);
    if (k === '--model') {
      const eq = v.indexOf('=');
      if (eq < 0) throw new Error(`--model ${v}: expected NAME=PATH`);
      a.models.push({ name: v.slice(0, eq), file: v.slice(eq + 1) });
    } else if (k === '--batch') a.batch = v.split(',').map(Number);
    else if (k === '--threads') a.threads = Number(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else if (k === '--seconds') a.seconds = Number(v);
    else if (k === '--fusebench') a.fusebench = v;
    else if (k === '--ort-dir') a.ortDir = v;
    else if (k === '--fusion') a.fusion = v;
    else if (k === '--alternation') a.alternation = v;
    else if (k === '--winograd') {
      // off: every convolution direct (a detector whose boxes sit on a threshold can flip in
      // Winograd's rounding and fail fusebench's accuracy check).
      if (v !== 'on' && v !== 'off') throw new Error(`--winograd ${v}: expected on or off`);
      a.winograd = v;
    }
    else throw new Error(`unknown option ${k}`);
  }
  if (!a.models.length) throw new Error('give at least one --model NAME=PATH');
  return a;
}

// .npy (v1-v3, little-endian, C order) to { dtype, shape, data } with an ORT-ready typed array.
const NPY_TYPES = { '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|b1': ['bool', Uint8Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array] };
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(Boolean).map(Number);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order is not supported`);
  const t = NPY_TYPES[descr];
  if (!t) throw new Error(`${file}: dtype ${descr} not handled by this script`);
  const bytes = buf.subarray(start);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return { dtype: t[0], shape, data: new t[1](copy.buffer) };
}

const sanitize = (n) => n.replace(/[^A-Za-z0-9._-]/g, '_');
const median = (xs) => { const s = [...xs].sort((p, q) => p - q); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stderr}`);
  return r.stdout;
}

async function timeOrt(session, feeds, seconds) {
  for (let i = 0; i < 3; ++i) await session.run(feeds);  // warm-up
  const samples = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end || samples.length < 10) {
    const t0 = performance.now();
    await session.run(feeds);
    samples.push(performance.now() - t0);
  }
  return samples;
}

function timeFusebench(a, model, batch, tmp) {
  const scenario = path.join(tmp, 'case.json');
  const db = path.join(tmp, `fb-${Date.now()}.db`);
  fs.writeFileSync(scenario, JSON.stringify({
    name: 'ort-comparison', model: path.resolve(model.file), matrix: { batch: [batch], fusion: [a.fusion] },
    threads: a.threads,
    ...(a.winograd === 'off' ? { winograd: false } : {}),
    // ORT is timed in a loop of its own; in block alternation fusebench's engine is too (20
    // runs, then 20 of the reference), with its weights in cache as ORT's are. Per-iteration
    // alternation has the reference evict them before every engine run (mobilenet_v2, b=1:
    // 4.10 against 3.37 ms).
    timing: { warmup_ms: 200, min_iterations: 10, max_seconds: a.seconds, target_rel_ci: 0.005,
              alternation: a.alternation, block_iterations: 20 },
  }));
  run(a.fusebench, ['run', scenario, '--db', db, '--report', path.join(tmp, 'r.html')]);
  const rows = JSON.parse(run(a.fusebench, ['export', '--db', db, '--format', 'json']));
  const engine = rows.find(r => r.executor === 'engine');
  return engine.median_ms;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const ort = createRequire(path.resolve(a.ortDir) + '/')('onnxruntime-node');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fb-ort-'));
  console.log(`onnxruntime-node ${ort.env.versions?.common ?? ''} · threads ${a.threads} · rounds ${a.rounds} × ${a.seconds} s · load ${os.loadavg().map(x => x.toFixed(2)).join(' ')}`);
  const table = [];
  for (const model of a.models) {
    for (const batch of a.batch) {
      const io = path.join(tmp, `${model.name}-b${batch}`);
      fs.mkdirSync(io, { recursive: true });
      run(a.fusebench, ['exec', model.file, '--executor', 'engine', '--fusion', a.fusion, '--batch', String(batch),
        '--threads', String(a.threads), '--save-inputs', path.join(io, 'in'), '--save-outputs', path.join(io, 'out'),
        ...(a.winograd === 'off' ? ['--no-winograd'] : [])]);
      const sessions = {};
      for (const level of ['all', 'disabled'])
        sessions[level] = await ort.InferenceSession.create(model.file, {
          intraOpNumThreads: a.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: level });
      const feeds = {};
      for (const name of sessions.all.inputNames) {
        const t = readNpy(path.join(io, 'in', sanitize(name) + '.npy'));
        feeds[name] = new ort.Tensor(t.dtype, t.data, t.shape);
      }
      // Same inputs, same answers: ORT's outputs against the ones fusebench saved.
      const outs = await sessions.all.run(feeds);
      // A data-dependent output (a detector's boxes) may differ in shape where a near-tie
      // falls the other way: said as such, not folded into the error as NaN.
      let maxErr = 0;
      const shapeDiffs = [];
      for (const name of sessions.all.outputNames) {
        const want = readNpy(path.join(io, 'out', sanitize(name) + '.npy'));
        const got = outs[name];
        if (JSON.stringify(got.dims.map(Number)) !== JSON.stringify(want.shape)) {
          shapeDiffs.push(`${name}: ORT [${got.dims.join(',')}], fusebench [${want.shape.join(',')}]`);
          continue;
        }
        for (let i = 0; i < got.data.length; ++i) maxErr = Math.max(maxErr, Math.abs(Number(got.data[i]) - Number(want.data[i])));
      }
      const agreement = `|ORT - fusebench| max ${maxErr.toExponential(2)}` +
        (shapeDiffs.length ? ` over the outputs of equal shape; shapes differ: ${shapeDiffs.join('; ')}` : '');
      const t = { all: [], disabled: [], fusebench: [] };
      for (let r = 0; r < a.rounds; ++r) {
        t.all.push(median(await timeOrt(sessions.all, feeds, a.seconds)));
        t.disabled.push(median(await timeOrt(sessions.disabled, feeds, a.seconds)));
        t.fusebench.push(timeFusebench(a, model, batch, tmp));
      }
      const row = { model: model.name, batch, ort_all: median(t.all), ort_disabled: median(t.disabled), fusebench: median(t.fusebench), max_abs_err: maxErr };
      row.ratio = Math.min(row.ort_all, row.ort_disabled) / row.fusebench;
      table.push(row);
      console.log(`${model.name} b=${batch}: ORT all ${row.ort_all.toFixed(3)} ms (rounds ${t.all.map(x => x.toFixed(2)).join(' ')}), ` +
        `ORT disabled ${row.ort_disabled.toFixed(3)} ms (${t.disabled.map(x => x.toFixed(2)).join(' ')}), ` +
        `fusebench ${a.fusion} ${row.fusebench.toFixed(3)} ms (${t.fusebench.map(x => x.toFixed(2)).join(' ')}), ` +
        `best ORT / fusebench = ${row.ratio.toFixed(2)}x, ${agreement}`);
    }
  }
  console.log('\n| model | batch | ORT all ms | ORT disabled ms | fusebench ms | best ORT / fusebench |');
  console.log('|---|---|---|---|---|---|');
  for (const r of table)
    console.log(`| ${r.model} | ${r.batch} | ${r.ort_all.toFixed(3)} | ${r.ort_disabled.toFixed(3)} | ${r.fusebench.toFixed(3)} | ${r.ratio.toFixed(2)}x |`);
  console.log(`load after: ${os.loadavg().map(x => x.toFixed(2)).join(' ')}`);
  fs.rmSync(tmp, { recursive: true, force: true });
}

main().catch((e) => { console.error(`bench_ort: ${e.message}`); process.exit(2); });
