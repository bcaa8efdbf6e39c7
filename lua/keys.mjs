// The keys of every script in lua/, declared once. `scripts/build-lua.mjs`
// generates from this file both sides of each call:
// - the TypeScript builders of each call's KEYS (`ScriptKeys`, in
//   libs/threadmill/src/backend/redis/scripts/script-keys.generated.ts),
//   which take each key's name from `RedisKeys` (backend/redis/redis-keys.ts);
// - in each script, at its `--- @keys` line, a local per key
//   (`local leasesKey = KEYS[3]`) and, for a script that takes keys per
//   queue, `queueKeys(q)`: the table of queue q's keys by name
//   (`queueKeys(q).running`), made once per queue and call.
//
// To add a key to a script: declare it in `keys` (once for the whole
// backend), name it in the script's list in `scripts`, and use it in the
// script by its local's name. The order of a list is the order on the wire;
// nothing else states it.
//
// A key's local in Lua is its name with `Key` after it (`leasesKey`), but a
// name that ends in `Prefix` is its own local (`runPrefix`); in a
// `queueKeys(q)` table it is the name alone. A key is, by its fields:
// - of the backend: `RedisKeys.<name>`;
// - `perQueue`: `RedisKeys.<name>(queue)`, the call's queue (a builder
//   parameter `queue`) when listed on its own, each queue of the call (a
//   parameter `queues`) inside a `{ perQueue: [...] }` group;
// - `arg`: `RedisKeys.<name>(<arg>)`, the builder taking `<arg>`;
// - `given`: passed by the caller as is (a builder parameter of its name);
// - `list`: several given keys, passed last, each read in Lua as `<name>Key(i)`.
// Script headers name the keys they take from here rather than describe them.

/** @type {Record<string, { key: string; type: string; holds: string; perQueue?: true; arg?: string; given?: true; list?: true }>} */
export const keys = {
  // Of the backend: `threadmill:{alias}:<key>`.
  layout: { key: 'layout', type: 'STRING', holds: 'the storage layout version of these keys' },
  upgrade: {
    key: 'upgrade',
    type: 'HASH',
    holds:
      "where an unfinished upgrade of the layout is: from, walk, cursor, pending, key, left; gone once it's complete",
  },
  seq: { key: 'seq', type: 'STRING', holds: 'counter: the FIFO part of ready scores (set once any run was stored)' },
  queues: { key: 'queues', type: 'SET', holds: 'names of the queues applications registered (for inspectors)' },
  brokerWake: {
    key: 'broker:wake',
    type: 'ZSET',
    holds: 'marker that wakes the brokers to re-plan their sleep (a new deferred run, a first lease, a schedule)',
  },
  workers: { key: 'workers', type: 'ZSET', holds: 'live worker process ids by record expiry' },
  leases: {
    key: 'leases',
    type: 'HASH',
    holds: 'run id → its current lease: `token|claimedAt|attempt|recoveries|started|worker` (includes/lease)',
  },
  fresh: {
    key: 'fresh',
    type: 'HASH',
    holds:
      'run id → record of a run no attempt settled: `enqueuedAt|score|leaseTtl|runAfter|queue|payload` (includes/fresh)',
  },
  done: {
    key: 'done',
    type: 'HASH',
    holds: 'run id → record of a run that succeeded in the attempt that took it from `fresh` (includes/done)',
  },
  waiting: {
    key: 'waiting',
    type: 'ZSET',
    holds: 'run id → registration expiry: runs somebody waits on (watch.lua)',
  },
  finished: {
    key: 'finished',
    type: 'STREAM',
    holds: 'one entry per registered run that settled or was removed, for its waiters (includes/finished)',
  },
  runPrefix: {
    key: 'run:',
    type: 'prefix',
    holds:
      'prefix of run HASH keys (`run:<id>`): a script that meets run ids (in ARGV, or popped from an index) ' +
      'derives their keys from it, which share its hash tag, hence its slot',
  },
  queuePrefix: { key: 'q:', type: 'prefix', holds: 'prefix of every per-queue key (`q:<queue>:…`)' },
  flowPrefix: {
    key: 'flow:',
    type: 'prefix',
    holds:
      'prefix of flow HASH keys (`flow:<id>`: counts, state, per node `n:<id>` its name, queue and first outcome, ' +
      "per dependent `e:<id>` its dependencies; includes/flow-settle) and of a staging flow's `flow:<id>:roots` LIST",
  },
  taskLimits: {
    key: 'task-limits',
    type: 'HASH',
    holds: 'task → its limit per limit group, `max|perMs|slackMs|concurrency` (includes/limit-groups)',
  },
  schedules: {
    key: 'schedules',
    type: 'ZSET',
    holds: 'schedule id → next due time (0: to plan, +inf: none)',
  },
  schedulePrefix: { key: 'schedule:', type: 'prefix', holds: 'prefix of schedule HASH keys (`schedule:<id>`)' },
  codeSchedules: {
    key: 'code-schedules',
    type: 'SET',
    holds: 'ids of the schedules declared in code: what a declaration looks through (schedule-declare.lua)',
  },

  // Of one run, worker or schedule: a builder parameter names it.
  run: {
    key: 'run:<id>',
    type: 'HASH',
    arg: 'id',
    holds: 'the run hash of the call’s run (a run some attempt settled)',
  },
  flow: {
    key: 'flow:<id>',
    type: 'HASH',
    arg: 'flowId',
    holds: 'the hash of the call’s flow (includes/flow-settle)',
  },
  worker: {
    key: 'worker:<id>',
    type: 'HASH',
    arg: 'workerId',
    holds: "a worker process's record (heartbeat), expiring",
  },
  schedule: {
    key: 'schedule:<id>',
    type: 'HASH',
    arg: 'id',
    holds: 'a schedule: definition, digest, source, next slot, runs, last slot and run, code declarations',
  },

  // Given by the caller.
  callRecord: {
    key: 'last-call:<sender>:<slot>',
    type: 'STRING',
    given: true,
    holds: "this call's record slot: a resent copy of the call recognises itself (includes/call-record)",
  },
  dedupe: {
    key: 'q:<queue>:dedupe:<key>',
    type: 'STRING',
    given: true,
    list: true,
    holds: "the call's deduplication keys, each once: `firstAt|holdMs|releaseOn|runId` (includes/dedupe)",
  },

  // Of a queue: `q:<queue>:<key>`.
  ready: {
    key: 'q:<queue>:ready',
    type: 'ZSET',
    perQueue: true,
    holds: "ready run ids by score, but the ready list's",
  },
  readyList: {
    key: 'q:<queue>:ready-list',
    type: 'LIST',
    perQueue: true,
    holds: 'ids of fresh runs enqueued ready now at priority 0, in enqueue order (includes/ready-list)',
  },
  withdrawn: {
    key: 'q:<queue>:withdrawn',
    type: 'HASH',
    perQueue: true,
    holds: "tombstones of the ready list: id → its dead places, '' → their total (includes/ready-list)",
  },
  deferred: { key: 'q:<queue>:deferred', type: 'ZSET', perQueue: true, holds: 'deferred run ids by due time' },
  running: { key: 'q:<queue>:running', type: 'ZSET', perQueue: true, holds: 'leased run ids by lease deadline' },
  successful: {
    key: 'q:<queue>:successful',
    type: 'LIST',
    perQueue: true,
    holds:
      'ids of successful runs kept for the default TTL, in finish order (includes/successful-index); ' +
      'the index of TTL class `<ttl>` is derived from it (includes/result-classes)',
  },
  failed: {
    key: 'q:<queue>:failed',
    type: 'ZSET',
    perQueue: true,
    holds: 'failed run ids kept for the default TTL, by finish time; class indexes are derived from it',
  },
  resultClasses: {
    key: 'q:<queue>:result-classes',
    type: 'SET',
    perQueue: true,
    holds:
      'the TTL classes whose finished index may hold runs: `successful:<ttl>`, `failed:<ttl>` (includes/result-classes)',
  },
  quarantined: {
    key: 'q:<queue>:quarantined',
    type: 'ZSET',
    perQueue: true,
    holds: 'quarantined run ids by quarantine time',
  },
  cancelled: {
    key: 'q:<queue>:cancelled',
    type: 'ZSET',
    perQueue: true,
    holds: 'cancelled run ids by finish time, kept for the default failed TTL (cancel.lua)',
  },
  wake: {
    key: 'q:<queue>:wake',
    type: 'ZSET',
    perQueue: true,
    holds: 'marker `w`: ready runs may be waiting (idle consumers block on it)',
  },
  paused: {
    key: 'q:<queue>:paused',
    type: 'STRING',
    perQueue: true,
    holds: 'the pause flag, when the queue was paused (epoch ms): claims skip the queue while it exists (pause.lua)',
  },
  cap: {
    key: 'q:<queue>:cap',
    type: 'STRING',
    perQueue: true,
    holds: 'the concurrency cap: claims lease a run only while the running set is smaller (cap.lua)',
  },
  rate: {
    key: 'q:<queue>:rate',
    type: 'STRING',
    perQueue: true,
    holds: 'the rate limit `max|perMs|slackMs` (rate.lua)',
  },
  grouped: {
    key: 'q:<queue>:grouped',
    type: 'STRING',
    perQueue: true,
    holds: 'flag: the queue holds runs of limit groups, so its claims look for groups (includes/claim-groups)',
  },
  groups: {
    key: 'q:<queue>:groups',
    type: 'ZSET',
    perQueue: true,
    holds: "the queue's limit groups with parked runs or leases → when a claim should look at each again",
  },
  groupPrefix: {
    key: 'q:<queue>:group:',
    type: 'prefix',
    perQueue: true,
    holds:
      "prefix of the queue's limit groups' keys: `held:<group>`, `running:<group>`, `starts:<group>` (includes/limit-groups)",
  },
  flowWaiting: {
    key: 'q:<queue>:waiting',
    type: 'ZSET',
    perQueue: true,
    holds: "the queue's WAITING flow nodes (dependencies not settled) by enqueue time: no claim reads it",
  },
  flowed: {
    key: 'q:<queue>:flowed',
    type: 'STRING',
    perQueue: true,
    holds: 'flag: the queue got flow nodes, so settling its runs looks for their flows (includes/flow-settle)',
  },
  parked: { key: 'q:<queue>:parked', type: 'STRING', perQueue: true, holds: "how many of the queue's runs are parked" },
  stats: {
    key: 'q:<queue>:stats',
    type: 'HASH',
    perQueue: true,
    holds:
      'lifetime counters: enqueued, succeeded, failed, retried, quarantined, staleAcks, requeued, dequeued, cancelled',
  },
  metrics: {
    key: 'q:<queue>:metrics:',
    type: 'prefix',
    perQueue: true,
    holds: 'prefix of the per-minute HASH buckets (`<prefix><epoch minute>`, includes/metrics)',
  },
  keyPrefix: {
    key: 'q:<queue>:',
    type: 'prefix',
    perQueue: true,
    holds:
      'prefix of every key of the queue: a script that takes many queues derives the queue keys it may need ' +
      'from it (one key passed per queue, not one per key: a call pays per key passed)',
  },
};

/**
 * Each script's KEYS, in order: key names, and `{ perQueue: [names] }` groups
 * repeated for each queue of the call, and `{ onlyWith: list, keys: [names] }`:
 * those keys and then the list, passed only when the caller gives a list that
 * is not empty.
 */
export const scripts = {
  acknowledge: [
    'runPrefix',
    'brokerWake',
    'leases',
    'fresh',
    {
      perQueue: [
        'running',
        'ready',
        'deferred',
        'wake',
        'successful',
        'failed',
        'quarantined',
        'stats',
        'metrics',
        'resultClasses',
      ],
    },
    'callRecord',
    'waiting',
    'finished',
    'done',
    'flowPrefix',
    'queuePrefix',
    { perQueue: ['keyPrefix'] },
  ],
  cancel: [
    'run',
    'ready',
    'deferred',
    'running',
    'cancelled',
    'stats',
    'leases',
    'fresh',
    'withdrawn',
    'callRecord',
    'waiting',
    'finished',
    'done',
    'metrics',
    'groupPrefix',
    'groups',
    'parked',
    'wake',
    'runPrefix',
    'flowPrefix',
    'queuePrefix',
    'brokerWake',
    'flowWaiting',
  ],
  cap: ['cap', 'wake', 'ready', 'readyList', 'queues'],
  claim: ['runPrefix', 'brokerWake', 'leases', 'fresh', 'callRecord', 'taskLimits', { perQueue: ['keyPrefix'] }],
  defer: [
    'leases',
    'runPrefix',
    'fresh',
    'callRecord',
    'brokerWake',
    { perQueue: ['running', 'deferred', 'keyPrefix'] },
  ],
  dequeue: [
    'run',
    'ready',
    'deferred',
    'stats',
    'leases',
    'fresh',
    'withdrawn',
    'callRecord',
    'waiting',
    'finished',
    'done',
    'groupPrefix',
    'groups',
    'parked',
    'runPrefix',
    'flowPrefix',
    'queuePrefix',
    'brokerWake',
    'flowWaiting',
  ],
  enqueue: [
    'seq',
    'brokerWake',
    'runPrefix',
    'fresh',
    'callRecord',
    { perQueue: ['ready', 'deferred', 'wake', 'stats', 'metrics', 'readyList', 'grouped'] },
    'done',
    'queues',
    // Only a call holding dedupe items reads leases and its keys.
    { onlyWith: 'dedupe', keys: ['leases'] },
  ],
  flowStore: ['seq', 'brokerWake', 'runPrefix', 'flowPrefix', 'queuePrefix', 'flow', 'queues'],
  flowDependencies: ['run', 'flowPrefix'],
  flowExtend: ['runPrefix', 'flowPrefix', 'queuePrefix', 'leases', 'seq', 'brokerWake', 'queues'],
  flowCancel: ['flow', 'runPrefix', 'queuePrefix', 'leases', 'fresh', 'waiting', 'finished'],
  pause: ['paused', 'wake', 'queues'],
  promote: ['runPrefix', 'fresh', { perQueue: ['deferred', 'ready', 'wake', 'readyList', 'paused'] }],
  purge: [
    'runPrefix',
    'ready',
    'deferred',
    'running',
    'successful',
    'failed',
    'quarantined',
    'wake',
    'leases',
    'fresh',
    'readyList',
    'withdrawn',
    'callRecord',
    'waiting',
    'finished',
    'done',
    'resultClasses',
    'cancelled',
    'groups',
    'groupPrefix',
    'parked',
    'grouped',
    'seq',
    'flowWaiting',
    'flowed',
    'flowPrefix',
    'queuePrefix',
    'brokerWake',
  ],
  rate: ['rate', 'wake', 'ready', 'readyList', 'queues'],
  readyAge: ['ready', 'runPrefix', 'fresh', 'readyList', 'withdrawn'],
  readyPage: ['ready', 'readyList', 'withdrawn', 'fresh'],
  reap: ['runPrefix', 'leases', 'fresh', { perQueue: ['running', 'ready', 'wake', 'keyPrefix'] }],
  release: ['leases', 'runPrefix', 'fresh', 'callRecord', { perQueue: ['running', 'ready', 'wake', 'keyPrefix'] }],
  renew: ['workers', 'worker', 'leases', { perQueue: ['running', 'paused'] }, 'runPrefix'],
  report: ['leases', 'fresh', 'runPrefix', 'waiting', 'finished', 'callRecord', { perQueue: ['running'] }],
  requeue: [
    'run',
    'ready',
    'failed',
    'quarantined',
    'wake',
    'stats',
    'leases',
    'fresh',
    'callRecord',
    'done',
    'resultClasses',
    'cancelled',
  ],
  requeueAll: [
    'runPrefix',
    'ready',
    'failed',
    'quarantined',
    'cancelled',
    'wake',
    'stats',
    'leases',
    'fresh',
    'done',
    'resultClasses',
    'callRecord',
  ],
  resume: ['paused', 'wake', 'ready', 'readyList'],
  scheduleDeclare: ['schedules', 'schedulePrefix', 'brokerWake', 'codeSchedules'],
  scheduleDue: ['schedules', 'schedulePrefix'],
  scheduleFire: [
    'schedule',
    'schedules',
    'seq',
    'runPrefix',
    'fresh',
    'done',
    'ready',
    'readyList',
    'wake',
    'stats',
    'metrics',
    'codeSchedules',
  ],
  scheduleUpsert: ['schedule', 'schedules', 'brokerWake'],
  start: ['leases', 'running'],
  taskLimit: ['taskLimits', 'queues', 'queuePrefix'],
  // Not touched: it routes the call to the backend's slot.
  time: ['workers'],
  trim: ['runPrefix', { perQueue: ['successful', 'failed', 'resultClasses'] }, 'done', { perQueue: ['cancelled'] }],
  upgrade: ['layout', 'leases', 'runPrefix', 'queues', 'queuePrefix', 'seq', 'upgrade'],
  wake: [{ perQueue: ['wake', 'ready', 'readyList', 'groups'] }],
  watch: ['waiting', 'finished', 'fresh', 'runPrefix', 'done'],
};
