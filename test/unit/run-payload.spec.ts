import { describe, expect, it } from 'vitest';
import { decodeRunPayload, encodeRunPayload } from '../../libs/threadmill/src/codec/run-payload.js';

describe('run envelopes', () => {
  it('reads back what it writes, whatever the task name, priority and arguments', () => {
    const names = ['mail.send', 'say "hi"', 'back\\slash', 'tab\there', 'ünïcode ✓', '', 'a",[9]]', 'a","args":[9]'];
    const args = [{ id: 1, email: 'user1@example.com' }, [1, 'two', null], 'x"},"y":{', new Date(Date.UTC(2026, 0, 2))];
    for (const task of names) {
      for (const priority of [0, 7, -3]) {
        const text = encodeRunPayload(task, priority, args);
        expect(text).not.toContain('\n');
        const decoded = decodeRunPayload(text);
        expect(decoded.task).toBe(task);
        expect(decoded.args).toEqual(args);
        expect(decoded.priority ?? 0).toBe(priority);
      }
    }
  });

  it('writes the compact array form, the priority only when it is not 0 or headers follow', () => {
    expect(encodeRunPayload('mail.send', 0, [{ id: 1 }])).toBe('["mail.send",[{"id":1}]]');
    expect(encodeRunPayload('mail.send', -3, [])).toBe('["mail.send",[],-3]');
    expect(encodeRunPayload('mail.send', 0, [1], '{"traceparent":"00-ab"}')).toBe(
      '["mail.send",[1],0,{"traceparent":"00-ab"}]',
    );
    expect(decodeRunPayload(encodeRunPayload('mail.send', 4, [1], '{"traceparent":"00-ab"}'))).toEqual({
      v: 2,
      task: 'mail.send',
      args: [1],
      priority: 4,
      headers: { traceparent: '00-ab' },
    });
    expect(decodeRunPayload('["t",[1]]')).toEqual({ v: 2, task: 't', args: [1] });
    expect(decodeRunPayload('["t",[1],5]')).toEqual({ v: 2, task: 't', args: [1], priority: 5 });
  });

  it('reads envelopes of other layouts and versions: the object form, a legacy queue field, keys or elements after the arguments, spaces', () => {
    expect(decodeRunPayload('{"v":1,"task":"t","queue":"q","priority":0,"args":[1]}')).toMatchObject({
      v: 1,
      task: 't',
      args: [1],
    });
    expect(decodeRunPayload('{"v":1,"task":"t","args":[1],"queue":"q"}')).toMatchObject({ task: 't', args: [1] });
    expect(decodeRunPayload('{"v":1,"task":"t","args":[1] , "x":{"args":[2]}}')).toMatchObject({ args: [1] });
    expect(decodeRunPayload('{ "v": 1, "task": "t", "args": [2] }')).toMatchObject({ task: 't', args: [2] });
    expect(decodeRunPayload('{"v":1,"task":"t","priority":4,"args":[]}')).toMatchObject({ priority: 4 });
    // The producer's trace context, a fourth element; one that is not an object of strings is ignored.
    expect(decodeRunPayload('["t",[1],0,{"traceparent":"00-ab"}]')).toEqual({
      v: 2,
      task: 't',
      args: [1],
      headers: { traceparent: '00-ab' },
    });
    expect(decodeRunPayload('["t",[1],0,{"traceparent":7}]')).toEqual({ v: 2, task: 't', args: [1] });
    expect(decodeRunPayload('["t",[1],0,["x"]]')).toEqual({ v: 2, task: 't', args: [1] });
    // A later version may append elements: this one reads what it knows.
    expect(decodeRunPayload('["t",[1],2,{},"later",{"x":1}]')).toEqual({
      v: 2,
      task: 't',
      args: [1],
      priority: 2,
      headers: {},
    });
    expect(decodeRunPayload(' [ "t" , [ 2 ] , 3 ] ')).toEqual({ v: 2, task: 't', args: [2], priority: 3 });
  });

  it('refuses what is not an envelope, naming both forms', () => {
    for (const text of [
      '{"v":1,"task":"t","args":{"a":1}}',
      '{"v":1,"task":"t","args":[1}',
      '{"v":2,"task":"t","args":[]}',
      '{"v":1,"task":7,"args":[]}',
      '{"v":1,"task":"t"}',
      '["t"]',
      '["t",{"a":1}]',
      '[7,[]]',
      '["t",[],"high"]',
      '["t",[],1.5]',
      '[]',
      'null',
      '"t"',
    ]) {
      expect(() => decodeRunPayload(text), text).toThrow(/JSON|not a Threadmill run envelope/);
    }
  });
});
