// peer.mjs runs one Node.js job queue (graphile-worker or pg-boss) for one
// bwbench run, driven by bwbench over stdin and stdout, one line each way:
//
//   insert N BATCH CONC  insert N noop jobs through the queue's bulk path,
//                        BATCH per call, CONC calls at once  → "ok"
//   start                start the workers                   → "ok"
//   enqueue STAMP        insert one job carrying STAMP       → "ok"
//   close                stop the workers, end the process   → "ok"
//
// A failed command answers "err MESSAGE". While the workers run, each job
// carrying a stamp prints "w STAMP" when its handler starts; jobs without
// one are counted and printed as "n COUNT" a batch at a time, so the pipe
// does not cost one write per job of a drain.
//
// The run's settings come as JSON in $BWBENCH_PEER: {"system", "url",
// "schema", "queue", "settings": {name: value}}; bwbench prints the same
// settings with the row.
import { createInterface } from "node:readline";

const cfg = JSON.parse(process.env.BWBENCH_PEER ?? "{}");
const s = cfg.settings ?? {};
const num = (name) => {
  const v = Number(s[name]);
  if (!Number.isFinite(v)) throw new Error(`setting ${name}=${s[name]} is not a number`);
  return v;
};
const ms = (name) => {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(String(s[name]));
  if (!m) throw new Error(`setting ${name}=${s[name]} is not a duration in ms or s`);
  return Number(m[1]) * (m[2] === "s" ? 1000 : 1);
};

let out = "";
const emit = (line) => {
  out += line + "\n";
  if (out.length > 1 << 14) flush();
};
const flush = () => {
  if (out !== "") {
    process.stdout.write(out);
    out = "";
  }
};

// Work counting: a stamped job is printed at once (latency), the others in
// batches.
let unstamped = 0;
let pendingFlush = false;
const worked = (stamp) => {
  if (stamp && stamp !== "0") {
    emit("w " + stamp);
    flush();
    return;
  }
  unstamped++;
  if (!pendingFlush) {
    pendingFlush = true;
    setImmediate(() => {
      pendingFlush = false;
      if (unstamped > 0) {
        emit("n " + unstamped);
        unstamped = 0;
      }
      flush();
    });
  }
};

const quietLogger = async () => {
  const { Logger } = await import("graphile-worker");
  return new Logger(() => (level, message) => {
    if (level === "error" || level === "warning") process.stderr.write(`graphile-worker ${level}: ${message}\n`);
  });
};

// Each driver: open() prepares the storage, insert(k) bulk-inserts k jobs,
// one(stamp) inserts one, start() runs the workers, close() stops.
async function graphileWorker() {
  const gw = await import("graphile-worker");
  const logger = await quietLogger();
  const base = {
    connectionString: cfg.url,
    schema: cfg.schema,
    logger,
    maxPoolSize: num("pool"),
    pollInterval: ms("poll"),
    concurrentJobs: num("concurrency"),
    localQueue: num("local_queue") > 0 ? { size: num("local_queue") } : undefined,
    completeJobBatchDelay: num("complete_batch_delay_ms"),
    failJobBatchDelay: num("complete_batch_delay_ms"),
  };
  const preset = { worker: base };
  await gw.runMigrations({ preset, logger });
  const utils = await gw.makeWorkerUtils({ preset, logger });
  let runner;
  return {
    insert: async (k) => {
      const specs = new Array(k);
      for (let i = 0; i < k; i++) specs[i] = { identifier: "bwbench_noop", payload: { t: "0" } };
      await utils.addJobs(specs);
    },
    one: (stamp) => utils.addJob("bwbench_noop", { t: stamp }),
    start: async () => {
      runner = await gw.run({
        preset,
        logger,
        noHandleSignals: true,
        taskList: { bwbench_noop: async (payload) => worked(payload.t) },
      });
    },
    close: async () => {
      if (runner) await runner.stop();
      await utils.release();
    },
  };
}

async function pgBoss() {
  const { PgBoss } = await import("pg-boss");
  const open = async () => {
    // A queue's notify takes the instance's listener too (useListenNotify,
    // off by default).
    const boss = new PgBoss({
      connectionString: cfg.url,
      schema: cfg.schema,
      max: num("pool"),
      schedule: false,
      useListenNotify: s.notify === "true",
    });
    boss.on("error", (e) => process.stderr.write(`pg-boss error: ${e?.message ?? e}\n`));
    await boss.start();
    return boss;
  };
  const queue = cfg.queue;
  const boss = await open();
  await boss.createQueue(queue, { notify: s.notify === "true" });
  return {
    insert: async (k) => {
      const jobs = new Array(k);
      for (let i = 0; i < k; i++) jobs[i] = { data: { t: "0" } };
      await boss.insert(queue, jobs);
    },
    one: (stamp) => boss.send(queue, { t: stamp }),
    start: async () => {
      const opts = {
        batchSize: num("batch"),
        localConcurrency: num("workers"),
        pollingIntervalSeconds: ms("poll") / 1000,
        burstWhenBatchFull: s.burst === "true",
      };
      if (s.notify === "true") opts.notifyPollingIntervalSeconds = ms("notify_poll") / 1000;
      await boss.work(queue, opts, async (jobs) => {
        for (const j of jobs) worked(j.data.t);
      });
    },
    close: () => boss.stop({ graceful: true, wait: true, timeout: 30_000 }),
  };
}

async function bulk(driver, n, batch, conc) {
  let next = 0;
  const lane = async () => {
    while (next < n) {
      const k = Math.min(batch, n - next);
      next += k;
      await driver.insert(k);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, conc) }, lane));
}

async function main() {
  const drivers = { "graphile-worker": graphileWorker, "pg-boss": pgBoss };
  const open = drivers[cfg.system];
  if (!open) throw new Error(`unknown system ${JSON.stringify(cfg.system)}`);
  const driver = await open();
  emit("ready");
  flush();
  const rl = createInterface({ input: process.stdin });
  for await (const line of rl) {
    const [cmd, ...args] = line.trim().split(/\s+/);
    try {
      switch (cmd) {
        case "insert":
          await bulk(driver, Number(args[0]), Number(args[1]), Number(args[2]));
          break;
        case "start":
          await driver.start();
          break;
        case "enqueue":
          await driver.one(args[0]);
          break;
        case "close":
          await driver.close();
          emit("ok");
          flush();
          process.exit(0);
        default:
          throw new Error(`unknown command ${JSON.stringify(line)}`);
      }
      emit("ok");
    } catch (e) {
      emit("err " + String(e?.message ?? e).replace(/\s+/g, " "));
    }
    flush();
  }
  await driver.close();
}

main().catch((e) => {
  process.stderr.write(`bwbench peer ${cfg.system}: ${e?.stack ?? e}\n`);
  process.exit(1);
});
