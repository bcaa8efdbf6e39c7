import { createInspector, type FlowSpec } from '@threadmill/nestjs';
import { CommanderError } from 'commander';
import { render } from 'ink-testing-library';
import { stripVTControlCharacters } from 'node:util';
import { createElement } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { flowCommand } from '../../libs/threadmill-cli/src/flow/flow-command.js';
import { runFlow, type FlowOutput } from '../../libs/threadmill-cli/src/flow/run-flow.js';
import { App } from '../../libs/threadmill-cli/src/ui/app.js';
import { redisUrl } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

const add = (a: number, b: number, after?: FlowSpec['nodes'][string]['after']) =>
  ({ task: 'MathService.add', args: [a, b], ...(after ? { after } : {}) }) as const;

/** What a run of the command wrote, with the width it may cut lines to. */
function captured(columns?: number): FlowOutput & { stdout: string; stderr: string } {
  const output = {
    stdout: '',
    stderr: '',
    columns,
    out: (text: string) => void (output.stdout += text),
    err: (text: string) => void (output.stderr += text),
  };
  return output;
}

/** How `flowCommand` refuses `args`: the error's code and the message it wrote. */
async function usage(args: string[]): Promise<{ code: string | undefined; message: string }> {
  let message = '';
  const command = flowCommand().configureOutput({ writeErr: (text) => (message += text), writeOut: () => {} });
  const error = await command.parseAsync(args, { from: 'user' }).catch((thrown: unknown) => thrown);
  return { code: error instanceof CommanderError ? error.code : undefined, message };
}

describe('threadmill flow (a flow in the terminal)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function producer(): Promise<Harness> {
    const harness = await Harness.start();
    cleanups.push(() => harness.close());
    return harness;
  }

  it("prints a flow's state, counts and nodes, each after its dependencies, with live statuses", async () => {
    const harness = await producer();
    const flow = await harness.queue.enqueueFlow({
      nodes: {
        fetch: add(1, 1),
        parse: add(2, 2, ['fetch']),
        audit: add(3, 3, [{ node: 'fetch', onFailure: 'ignore' }]),
        report: add(4, 4, ['parse', 'audit']),
      },
    });
    const [lease] = await harness.backend.claim(['default'], 1, 'host:1:0', 0);
    expect(lease?.id).toBe(flow.nodes['fetch']);

    const output = captured();
    expect(await runFlow(flow.id, { redis: redisUrl(), alias: harness.alias, json: false }, output)).toBe(0);
    expect(output.stderr).toBe('');
    const lines = output.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`Flow ${flow.id} · RUNNING`);
    expect(lines[1]).toMatch(/^ {2}created \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \(\d+s ago\)$/);
    expect(lines[2]).toBe('  4 nodes · 4 edges · 1 running · 3 waiting');
    expect(lines[4]).toMatch(/^DEPTH +NODE +STATUS +ATT +TASK +QUEUE +AFTER +ID$/);
    const rows = lines.slice(5).map((line) => line.split(/ {2,}/));
    // The middle two by run id, as the view orders them.
    const middle = ['parse', 'audit'].sort((x, y) => (flow.nodes[x]! < flow.nodes[y]! ? -1 : 1));
    expect(rows.map((row) => row[1])).toEqual(['fetch', ...middle, 'report']);
    const byName = Object.fromEntries(rows.map((row) => [row[1], row]));
    expect(byName['fetch']).toEqual([
      '0',
      'fetch',
      'RUNNING',
      '1',
      'MathService.add',
      'default',
      '—',
      flow.nodes['fetch'],
    ]);
    expect(byName['audit']).toEqual([
      '1',
      'audit',
      'WAITING',
      '0',
      'MathService.add',
      'default',
      'fetch (ignore)',
      flow.nodes['audit'],
    ]);
    expect(byName['report']).toEqual([
      '2',
      'report',
      'WAITING',
      '0',
      'MathService.add',
      'default',
      'parse, audit',
      flow.nodes['report'],
    ]);

    // The columns line up: every row's run id starts where its heading does.
    const at = lines[4]!.indexOf('ID');
    expect(lines.slice(5).map((line) => line.indexOf(flow.nodes[line.split(/ +/)[1]!]!))).toEqual([at, at, at, at]);

    // A batch's callback waits for every run: its row names the first three.
    const batch = await harness.queue.enqueueBatch({
      runs: [1, 2, 3, 4, 5].map((n) => add(n, n)),
      onComplete: add(0, 0),
    });
    const listed = captured();
    await runFlow(batch.id, { redis: redisUrl(), alias: harness.alias, json: false }, listed);
    expect(listed.stdout).toMatch(
      /\n1 +onComplete +WAITING +0 +MathService\.add +default +run-0 \(ignore\), run-1 \(ignore\), run-2 \(ignore\) \+2 more +\S+\n$/,
    );

    const narrow = captured(40);
    await runFlow(flow.id, { redis: redisUrl(), alias: harness.alias, json: false }, narrow);
    expect(
      narrow.stdout
        .trimEnd()
        .split('\n')
        .every((line) => [...line].length <= 40),
    ).toBe(true);
  });

  it('prints the JSON of the view with --json, and says so in one line when no flow has the id', async () => {
    const harness = await producer();
    const flow = await harness.queue.enqueueChain([add(1, 1), add(2, 2)]);
    const output = captured();
    expect(await runFlow(flow.id, { redis: redisUrl(), alias: harness.alias, json: true }, output)).toBe(0);
    const view = JSON.parse(output.stdout);
    expect(view).toMatchObject({ id: flow.id, state: 'RUNNING', edges: 1, counts: { READY: 1, WAITING: 1 } });
    expect(view.nodes.map((node: { name: string }) => node.name)).toEqual(['0', '1']);

    const missing = captured();
    expect(await runFlow('no-such-flow', { redis: redisUrl(), alias: harness.alias, json: false }, missing)).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toBe(
      `threadmill flow: no flow "no-such-flow" on alias "${harness.alias}": it never existed, or it ended and its ` +
        'record expired (a flow is kept as long as the results of its runs). Check the id and --alias.\n',
    );

    const unreachable = captured();
    expect(
      await runFlow(flow.id, { redis: 'redis://127.0.0.1:1', alias: harness.alias, json: false }, unreachable),
    ).toBe(1);
    expect(unreachable.stderr).toMatch(
      /^threadmill flow: cannot reach Redis at 127\.0\.0\.1:1\/0: .*ECONNREFUSED.*\n$/,
    );
  });

  it('refuses a bad alias, a missing id and an extra argument as usage errors (main exits 2 for them)', async () => {
    expect(await usage(['--alias', 'no spaces', 'some-flow'])).toEqual({
      code: 'commander.invalidArgument',
      message: expect.stringMatching(/--alias must be 1-64 letters/),
    });
    expect(await usage([])).toEqual({
      code: 'commander.missingArgument',
      message: expect.stringMatching(/missing required argument 'id'/),
    });
    expect(await usage(['a', 'b'])).toEqual({
      code: 'commander.excessArguments',
      message: expect.stringMatching(/too many arguments/),
    });
  });

  it("shows a flow node's flow in its run detail in the inspector", async () => {
    const harness = await producer();
    const flow = await harness.queue.enqueueChain([add(1, 1)]);
    const inspector = await createInspector({ connection: redisUrl(), alias: harness.alias });
    cleanups.push(() => inspector.close());
    const ui = render(
      createElement(App, {
        inspector: inspector.inspector,
        describe: inspector.describe,
        alias: harness.alias,
        intervalMs: 300,
        columns: 80,
        rows: 24,
      }),
    );
    cleanups.push(() => ui.unmount());
    const frame = () => stripVTControlCharacters(ui.lastFrame() ?? '');
    await waitUntil('the run is listed', () => /MathService\.add\s+READY/.test(frame()), 10_000);
    ui.stdin.write('\r');
    await waitUntil('its detail shows', () => /status\s+READY/.test(frame()), 10_000);
    expect(frame()).toMatch(new RegExp(`flow\\s+${flow.id}`));
  });
});
