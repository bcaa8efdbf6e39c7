import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { collectBootGarbage } from '../../libs/threadmill/src/worker/collect-boot-garbage.js';

describe('collectBootGarbage', () => {
  it('collects, and leaves no gc global behind in this context or a new one', async () => {
    // A weakly held object that only a collection clears (a WeakRef keeps its
    // target for the rest of the job that made it: collect in a later one).
    let target: object | undefined = { big: Array.from({ length: 1_000 }, () => 'x') };
    const ref = new WeakRef(target);
    target = undefined;
    await new Promise(setImmediate);
    collectBootGarbage();
    expect(ref.deref()).toBeUndefined();
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });
});
