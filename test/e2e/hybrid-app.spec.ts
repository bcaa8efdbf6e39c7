import { TaskStatus } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

describe('a hybrid application: HTTP routes and a ThreadmillServer in one process (real processes)', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('serves requests while it consumes, and app.close() mid-drain finishes every run exactly once', async () => {
    const alias = uniqueAlias('hybrid');
    const producer = await Harness.start({ options: { alias }, imports: [] });
    cleanup.push(() => producer.close());
    const witness = new Witness(alias);
    cleanup.push(() => witness.close());
    // Runs that take a while (witnessed outside Threadmill), and tasks whose provider
    // a destroyed module would break: both must finish with their providers alive.
    const runs = await producer.queue.enqueueMany([
      ...Array.from({ length: 24 }, () => ({ task: 'handlers.work', args: [300] })),
      ...Array.from({ length: 8 }, () => ({ task: 'ResourceService.useAfter', args: [300] })),
    ]);

    const app = WorkerProcess.start(alias, [], { CONCURRENCY: '4' }, false, 'hybrid-main');
    cleanup.push(() => app.stop());
    await app.waitForOutput(/hybrid listening on (http:\/\/\S+)/);
    const url = /hybrid listening on (http:\/\/\S+)/.exec(app.log)![1]!;
    const counts = (await (await fetch(`${url}/counts`)).json()) as { queue: string }[];
    expect(counts.map((c) => c.queue)).toEqual(['default', 'emails', 'reports']);

    await waitUntil('runs are under way', async () => (await witness.completed()) >= 4);
    app.signal('SIGTERM');
    expect(await app.waitForExit()).toEqual({ code: 0, signal: null });
    expect(app.log).toMatch(/hybrid closed/);
    expect(app.log).not.toMatch(/destroyed while a task still needed it/);

    // Whatever the closed application did not start, another worker finishes.
    const pool = WorkerProcess.start(alias, ['--workers', '1', '--concurrency', '8', '--exit-empty']);
    cleanup.push(() => pool.stop());
    expect((await pool.waitForExit(30_000)).code).toBe(0);

    const results = await producer.queue.getResults(runs.map((r) => r.id));
    expect(results.map((r) => r?.status)).toEqual(runs.map(() => TaskStatus.SUCCESSFUL));
    expect(results.every((r) => r!.attempts === 1)).toBe(true);
    const handlerIds = runs.slice(0, 24).map((r) => r.id);
    const [starts, completions] = [await witness.starts(), await witness.completions()];
    expect(handlerIds.map((id) => [starts.get(id), completions.get(id)])).toEqual(handlerIds.map(() => [1, 1]));
  });
});
