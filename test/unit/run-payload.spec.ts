import { describe, expect, it } from 'vitest';
import { decodeRunPayload, encodeRunPayload } from '../../libs/threadmill/src/queue/run-payload.js';

describe('run envelopes', () => {
  it('reads back what it writes, whatever the task name, priority and arguments', () => {
    const names = ['mail.send', 'say "hi"', 'back\\slash', 'tab\there', 'ünïcode ✓', '', 'a","args":[9]'];
    const args = [{ id: 1, email: 'user1@example.com' }, [1, 'two', null], 'x"},"y":{', new Date(Date.UTC(2026, 0, 2))];
    for (const task of names) {
      for (const priority of [0, 7, -3]) {
        const decoded = decodeRunPayload(encodeRunPayload(task, priority, args));
        expect(decoded.task).toBe(task);
        expect(decoded.args).toEqual(args);
        expect(decoded.priority ?? 0).toBe(priority);
      }
    }
  });

  it('reads envelopes of other layouts: a legacy queue field, keys after the arguments, spaces', () => {
    expect(decodeRunPayload('{"v":1,"task":"t","queue":"q","priority":0,"args":[1]}')).toMatchObject({
      task: 't',
      args: [1],
    });
    expect(decodeRunPayload('{"v":1,"task":"t","args":[1],"queue":"q"}')).toMatchObject({ task: 't', args: [1] });
    expect(decodeRunPayload('{"v":1,"task":"t","args":[1] , "x":{"args":[2]}}')).toMatchObject({ args: [1] });
    expect(decodeRunPayload('{ "v": 1, "task": "t", "args": [2] }')).toMatchObject({ task: 't', args: [2] });
  });

  it('refuses what is not a version-1 envelope with its arguments in an array', () => {
    for (const text of [
      '{"v":1,"task":"t","args":{"a":1}}',
      '{"v":1,"task":"t","args":[1}',
      '{"v":2,"task":"t","args":[]}',
      '{"v":1,"task":7,"args":[]}',
      '{"v":1,"task":"t"}',
      'null',
    ]) {
      expect(() => decodeRunPayload(text), text).toThrow(/JSON|not a Threadmill v1 run envelope/);
    }
  });
});
