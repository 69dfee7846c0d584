-- A result store written by fusebench 0.1.0 at schema version 1 (sqlite3 .dump of a real
-- 'fusebench run' of a 2-case mlp scenario): test_store opens it to check the upgrade.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value NOT NULL
);
INSERT INTO meta VALUES('schema_version',1);
CREATE TABLE runs (
  id                INTEGER PRIMARY KEY,
  started_at        TEXT NOT NULL,       -- ISO 8601 UTC
  finished_at       TEXT,                -- NULL while running, or when interrupted
  git_commit        TEXT NOT NULL,
  git_dirty         INTEGER NOT NULL CHECK (git_dirty IN (0, 1)),
  host              TEXT NOT NULL,
  cpu_model         TEXT NOT NULL,
  cpu_flags         TEXT NOT NULL,
  cores             INTEGER NOT NULL,
  memory_bytes      INTEGER NOT NULL,
  kernel            TEXT NOT NULL,
  compiler          TEXT NOT NULL,
  library_versions  TEXT NOT NULL,       -- JSON: {"onednn": "2.6.3", "onnx": "1.12.0", ...}
  fusebench_version TEXT NOT NULL,
  command           TEXT NOT NULL
);
INSERT INTO runs VALUES(1,'2026-11-23T01:23:51Z','2026-11-23T01:23:51Z','cda684f4e8cf',0,'vm','AMD EPYC','sse4_2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512dq avx512_bf16 avx512_vnni avx_vnni',2,25276026880,'Linux 6.18.44-fc-v769','g++ 12.2.0','{"onednn":"2.6.3","onnx":"1.12.0","protobuf":"3.21.12","sqlite":"3.40.1","tbb":"2021.8"}','0.1.0','fusebench run tiny.json --db v1.db --report v1.html');
CREATE TABLE cases (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  case_key        TEXT NOT NULL,         -- CaseSpec::case_key()
  scenario        TEXT NOT NULL,
  scenario_file   TEXT NOT NULL,
  model           TEXT NOT NULL,
  model_hash      TEXT NOT NULL,
  precision       TEXT NOT NULL,
  batch           INTEGER NOT NULL,
  fusion          TEXT NOT NULL,
  threads         INTEGER NOT NULL,
  config_json     TEXT NOT NULL,         -- CaseSpec::to_json(): also timing, tolerances, seed
  status          TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error')),
  error           TEXT NOT NULL,         -- '' unless status = 'error'
  max_abs_err     REAL,                  -- here and below, a NULL REAL stands for NaN
  max_rel_err     REAL,
  cosine          REAL,
  accuracy_passed INTEGER NOT NULL CHECK (accuracy_passed IN (0, 1)),
  accuracy_detail TEXT NOT NULL,
  speedup         REAL,                  -- reference median / engine median
  stop_reason     TEXT NOT NULL,         -- why timing stopped: converged, time-cap, iteration-cap
  build_ms        REAL,
  onnx_nodes      INTEGER NOT NULL,
  layer_count     INTEGER NOT NULL       -- how many rows this case has in layers
);
INSERT INTO cases VALUES(1,1,'c8b83e66a788844b','tiny','/tmp/v1fix/tiny.json','zoo:mlp?in=64&hidden=64&layers=2','ec566457d2174f09a3687112aeac684d5ec2ef9169be380cce9aea427653e258','fp32',2,'none',1,'{"accuracy":{"atol":0.0001,"rtol":0.001},"batch":2,"fusion":"none","model":"zoo:mlp?in=64&hidden=64&layers=2","model_hash":"ec566457d2174f09a3687112aeac684d5ec2ef9169be380cce9aea427653e258","precision":"fp32","scenario":"tiny","scenario_file":"/tmp/v1fix/tiny.json","seed":1234,"threads":1,"timing":{"max_iterations":12,"max_seconds":0.2,"min_iterations":10,"target_rel_ci":0.01,"warmup_iterations":3,"warmup_ms":5.0}}','passed','',0.0,0.0,1.0,1,'',6.3986835082725486145,'iteration-cap',18.3812180000000005,7,7);
INSERT INTO cases VALUES(2,1,'83f9bb3b9042466b','tiny','/tmp/v1fix/tiny.json','zoo:mlp?in=64&hidden=64&layers=2','ec566457d2174f09a3687112aeac684d5ec2ef9169be380cce9aea427653e258','fp32',2,'standard',1,'{"accuracy":{"atol":0.0001,"rtol":0.001},"batch":2,"fusion":"standard","model":"zoo:mlp?in=64&hidden=64&layers=2","model_hash":"ec566457d2174f09a3687112aeac684d5ec2ef9169be380cce9aea427653e258","precision":"fp32","scenario":"tiny","scenario_file":"/tmp/v1fix/tiny.json","seed":1234,"threads":1,"timing":{"max_iterations":12,"max_seconds":0.2,"min_iterations":10,"target_rel_ci":0.01,"warmup_iterations":3,"warmup_ms":5.0}}','passed','',0.0,0.0,1.0,1,'',12.394504748982361874,'iteration-cap',0.8196039999999999992,7,3);
CREATE TABLE measurements (
  id                 INTEGER PRIMARY KEY,
  case_id            INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  executor           TEXT NOT NULL,
  n                  INTEGER NOT NULL,
  median_ms          REAL,
  p90_ms             REAL,
  p99_ms             REAL,
  mean_ms            REAL,
  stddev_ms          REAL,
  min_ms             REAL,
  max_ms             REAL,
  ci_low_ms          REAL,               -- 95% confidence interval of the median
  ci_high_ms         REAL,
  items_per_s        REAL,
  first_iteration_ms REAL,               -- the cold first run, not among the samples
  UNIQUE (case_id, executor)             -- also serves as the index on case_id
);
INSERT INTO measurements VALUES(1,1,'engine',12,0.0028105000000000000641,0.0089640000000000014807,0.038944070000000018116,0.0067878333333333332189,0.011435182638230881671,0.0027139999999999998327,0.042581000000000000793,0.0027260000000000001244,0.0039779999999999997653,711617.1499733143719,0.0043179999999999997897);
INSERT INTO measurements VALUES(2,1,'reference',12,0.017983499999999999485,0.018885000000000002479,0.021671330000000002535,0.018375333333333333796,0.0012247348754532614255,0.017382999999999999146,0.022012000000000000315,0.01784300000000000122,0.018614999999999999602,111213.05641282287251,0.027842999999999999694);
INSERT INTO measurements VALUES(3,2,'engine',12,0.0014740000000000000497,0.0016030000000000000411,0.0060808000000000033899,0.0019079166666666669185,0.0014888303803708303335,0.0014220000000000000868,0.0066330000000000000071,0.0014430000000000000551,0.0015130000000000000219,1356852.103120759828,0.0016230000000000000936);
INSERT INTO measurements VALUES(4,2,'reference',12,0.018269500000000001016,0.019805799999999998406,0.054252470000000017902,0.021729416666666667712,0.011595337467811111728,0.017714000000000000578,0.058500999999999997447,0.017983999999999999985,0.019155999999999999416,109472.07093790196813,0.021030000000000000082);
CREATE TABLE samples (
  measurement_id INTEGER NOT NULL REFERENCES measurements(id) ON DELETE CASCADE,
  iteration      INTEGER NOT NULL,       -- 0-based position in the run
  ms             REAL NOT NULL,
  PRIMARY KEY (measurement_id, iteration)  -- also serves as the index on measurement_id
) WITHOUT ROWID;
INSERT INTO samples VALUES(1,0,0.0095180000000000004184);
INSERT INTO samples VALUES(1,1,0.0031949999999999999233);
INSERT INTO samples VALUES(1,2,0.0028749999999999999514);
INSERT INTO samples VALUES(1,3,0.0027450000000000000441);
INSERT INTO samples VALUES(1,4,0.0028159999999999999267);
INSERT INTO samples VALUES(1,5,0.0027759999999999998218);
INSERT INTO samples VALUES(1,6,0.042581000000000000793);
INSERT INTO samples VALUES(1,7,0.0027260000000000001244);
INSERT INTO samples VALUES(1,8,0.0027249999999999999916);
INSERT INTO samples VALUES(1,9,0.0027139999999999998327);
INSERT INTO samples VALUES(1,10,0.0039779999999999997653);
INSERT INTO samples VALUES(1,11,0.0028050000000000002015);
INSERT INTO samples VALUES(2,0,0.022012000000000000315);
INSERT INTO samples VALUES(2,1,0.018915000000000001256);
INSERT INTO samples VALUES(2,2,0.018335000000000000602);
INSERT INTO samples VALUES(2,3,0.01808399999999999938);
INSERT INTO samples VALUES(2,4,0.017382999999999999146);
INSERT INTO samples VALUES(2,5,0.01784300000000000122);
INSERT INTO samples VALUES(2,6,0.01820400000000000143);
INSERT INTO samples VALUES(2,7,0.017483999999999999541);
INSERT INTO samples VALUES(2,8,0.01788299999999999959);
INSERT INTO samples VALUES(2,9,0.01788299999999999959);
INSERT INTO samples VALUES(2,10,0.018614999999999999602);
INSERT INTO samples VALUES(2,11,0.017863000000000000405);
INSERT INTO samples VALUES(3,0,0.0066330000000000000071);
INSERT INTO samples VALUES(3,1,0.0015130000000000000219);
INSERT INTO samples VALUES(3,2,0.0014829999999999999432);
INSERT INTO samples VALUES(3,3,0.0014740000000000000497);
INSERT INTO samples VALUES(3,4,0.0014430000000000000551);
INSERT INTO samples VALUES(3,5,0.0014220000000000000868);
INSERT INTO samples VALUES(3,6,0.0014740000000000000497);
INSERT INTO samples VALUES(3,7,0.0016130000000000000674);
INSERT INTO samples VALUES(3,8,0.0014519999999999999486);
INSERT INTO samples VALUES(3,9,0.0014929999999999999694);
INSERT INTO samples VALUES(3,10,0.0014530000000000000814);
INSERT INTO samples VALUES(3,11,0.0014419999999999999224);
INSERT INTO samples VALUES(4,0,0.019877999999999999836);
INSERT INTO samples VALUES(4,1,0.019155999999999999416);
INSERT INTO samples VALUES(4,2,0.018554999999999998577);
INSERT INTO samples VALUES(4,3,0.017714000000000000578);
INSERT INTO samples VALUES(4,4,0.018103999999999998565);
INSERT INTO samples VALUES(4,5,0.017983999999999999985);
INSERT INTO samples VALUES(4,6,0.058500999999999997447);
INSERT INTO samples VALUES(4,7,0.018335000000000000602);
INSERT INTO samples VALUES(4,8,0.017892999999999999183);
INSERT INTO samples VALUES(4,9,0.018263999999999998985);
INSERT INTO samples VALUES(4,10,0.018274999999999999578);
INSERT INTO samples VALUES(4,11,0.018093999999999998973);
CREATE TABLE build_logs (
  case_id INTEGER PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,
  text    TEXT NOT NULL
);
INSERT INTO build_logs VALUES(1,replace('imported: 7 nodes, 6 initializers, opset 17, batch 2\nfusion level: none, precision: fp32, threads: 1\nafter fusion: 7 layers from 7 ONNX nodes\nlayer 0: MatMul [onednn.matmul] ← /layers.0/fc/MatMul\nlayer 1: Add [onnx.Add] ← /layers.0/fc/Add\nlayer 2: Relu [onnx.Relu] ← /layers.0/relu/Relu\nlayer 3: MatMul [onednn.matmul] ← /layers.1/fc/MatMul\nlayer 4: Add [onnx.Add] ← /layers.1/fc/Add\nlayer 5: Relu [onnx.Relu] ← /layers.1/relu/Relu\nlayer 6: Gemm [onednn.matmul+bias] ← /head/Gemm\nactivation arena: 1024 bytes\n','\n',char(10)));
INSERT INTO build_logs VALUES(2,replace('imported: 7 nodes, 6 initializers, opset 17, batch 2\nfusion level: standard, precision: fp32, threads: 1\nafter constant-folding: 7 layers (0 rewrites)\nafter layernorm-fusion: 7 layers (0 rewrites)\nafter gelu-fusion: 7 layers (0 rewrites)\n  matmul-bias-activation-fusion: MatMul+Add+Relu at ''/layers.0/fc/MatMul'' → FusedMatMul\n  matmul-bias-activation-fusion: MatMul+Add+Relu at ''/layers.1/fc/MatMul'' → FusedMatMul\n  matmul-bias-activation-fusion: Gemm at ''/head/Gemm'' → FusedMatMul\nafter matmul-bias-activation-fusion: 3 layers (3 rewrites)\nafter elementwise-chain-fusion: 3 layers (0 rewrites)\nafter fusion: 3 layers from 7 ONNX nodes\nlayer 0: fusebench.FusedMatMul [onednn.matmul+bias+relu] ← /layers.0/fc/MatMul, /layers.0/fc/Add, /layers.0/relu/Relu\nlayer 1: fusebench.FusedMatMul [onednn.matmul+bias+relu] ← /layers.1/fc/MatMul, /layers.1/fc/Add, /layers.1/relu/Relu\nlayer 2: fusebench.FusedMatMul [onednn.matmul+bias] ← /head/Gemm\nactivation arena: 1024 bytes\n','\n',char(10)));
CREATE TABLE layers (
  case_id      INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  layer_index  INTEGER NOT NULL,
  name         TEXT NOT NULL,
  kind         TEXT NOT NULL,            -- op type of the engine layer
  sources_json TEXT NOT NULL,            -- JSON array of source ONNX node names
  PRIMARY KEY (case_id, layer_index)     -- also serves as the index on case_id
) WITHOUT ROWID;
INSERT INTO layers VALUES(1,0,'/layers.0/fc/MatMul','MatMul','["/layers.0/fc/MatMul"]');
INSERT INTO layers VALUES(1,1,'/layers.0/fc/Add','Add','["/layers.0/fc/Add"]');
INSERT INTO layers VALUES(1,2,'/layers.0/relu/Relu','Relu','["/layers.0/relu/Relu"]');
INSERT INTO layers VALUES(1,3,'/layers.1/fc/MatMul','MatMul','["/layers.1/fc/MatMul"]');
INSERT INTO layers VALUES(1,4,'/layers.1/fc/Add','Add','["/layers.1/fc/Add"]');
INSERT INTO layers VALUES(1,5,'/layers.1/relu/Relu','Relu','["/layers.1/relu/Relu"]');
INSERT INTO layers VALUES(1,6,'/head/Gemm','Gemm','["/head/Gemm"]');
INSERT INTO layers VALUES(2,0,'/layers.0/fc/MatMul','fusebench.FusedMatMul','["/layers.0/fc/MatMul","/layers.0/fc/Add","/layers.0/relu/Relu"]');
INSERT INTO layers VALUES(2,1,'/layers.1/fc/MatMul','fusebench.FusedMatMul','["/layers.1/fc/MatMul","/layers.1/fc/Add","/layers.1/relu/Relu"]');
INSERT INTO layers VALUES(2,2,'/head/Gemm','fusebench.FusedMatMul','["/head/Gemm"]');
CREATE INDEX cases_run_id ON cases(run_id);
CREATE INDEX cases_case_key ON cases(case_key);
COMMIT;
