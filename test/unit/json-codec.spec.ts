import { PayloadSerializationError } from '@threadmill/nestjs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { decodeJson, encodeJson } from '../../libs/threadmill/src/codec/json-codec.js';

setFlagsFromString('--expose-gc');
/** A full collection, from a context made after the flag: this worker did not start with `--expose-gc`. */
const collectGarbage = runInNewContext('gc') as () => void;

describe('the JSON codec', () => {
  it('round-trips plain JSON values exactly', () => {
    const value = { a: [1, -2.5, 0, 1e21], b: 'ünïcødé 🐢', c: null, d: true, e: { f: [] }, big: 9007199254740991 };
    expect(decodeJson(encodeJson(value, 'args'))).toEqual(value);
  });

  it('round-trips Dates as Dates, at any depth', () => {
    const when = new Date('2026-12-02T10:00:00.123Z');
    const decoded = decodeJson<{ when: Date; list: Date[] }>(encodeJson({ when, list: [when] }, 'args'));
    expect(decoded.when).toBeInstanceOf(Date);
    expect(decoded.when.getTime()).toBe(when.getTime());
    expect(decoded.list[0]).toEqual(when);
  });

  it('keeps an object that merely looks like a tagged date when it has other keys', () => {
    const value = { $date: '2026-01-01T00:00:00.000Z', other: 1 };
    expect(decodeJson(encodeJson(value, 'args'))).toEqual(value);
  });

  it('lets objects with toJSON serialize themselves', () => {
    const money = { amount: 5, toJSON: () => '5.00 EUR' };
    expect(decodeJson(encodeJson([money], 'args'))).toEqual(['5.00 EUR']);
  });

  it.each([
    [[() => 1], 'args[0] is a function'],
    [[1n], 'args[0] is a BigInt'],
    [[Symbol('s')], 'args[0] is a symbol'],
    [[[1, undefined]], 'args[0][1] is undefined inside an array'],
    [[NaN], 'args[0] is NaN'],
    [[{ x: Infinity }], 'args[0].x is Infinity'],
    [[new Map()], 'args[0] is a Map'],
    [[new Set([1])], 'args[0] is a Set'],
    [[Buffer.from('x')], 'args[0] is a Buffer; encode binary data as a base64 string'],
    [[new Date('nope')], 'args[0] is an invalid Date'],
    [[/x/], 'args[0] is a RegExp'],
  ])('refuses %o naming the path', (value, message) => {
    expect(() => encodeJson(value, 'args')).toThrow(PayloadSerializationError);
    expect(() => encodeJson(value, 'args')).toThrow(message);
  });

  it('refuses cycles but accepts shared references', () => {
    const shared = { n: 1 };
    expect(decodeJson(encodeJson([shared, shared], 'args'))).toEqual([{ n: 1 }, { n: 1 }]);
    const cyclic: unknown[] = [];
    cyclic.push({ back: cyclic });
    expect(() => encodeJson(cyclic, 'args')).toThrow('args[0].back refers back to an enclosing object');
  });

  it('keeps nothing of a value it refused deep inside another', async () => {
    // The walk's stack of enclosing objects is shared by every walk: a
    // refusal three objects deep must not leave them on it.
    let refused: WeakRef<object> | undefined;
    (() => {
      const value = { a: { b: [{ n: 1 }, () => 0] } };
      refused = new WeakRef(value.a);
      expect(() => encodeJson(value, 'args')).toThrow('args.a.b[1] is a function');
    })();
    // A WeakRef keeps its target until the current job ends.
    await new Promise((resolve) => setTimeout(resolve, 0));
    collectGarbage();
    expect(refused!.deref()).toBeUndefined();
    expect(decodeJson(encodeJson({ again: [1] }, 'args'))).toEqual({ again: [1] });
  });

  it('encodes a value whose getter encodes an enclosing object, each walk seeing only its own enclosing objects', () => {
    // While the getter runs, the outer walk holds `root` and `holder` open;
    // the walk inside it meets both again, which is no cycle of its own.
    const root: { holder?: object } = {};
    let depth = 0;
    root.holder = {
      get text(): string {
        if (depth > 0) return 'nested';
        depth++;
        try {
          return encodeJson(root, 'args');
        } finally {
          depth--;
        }
      },
    };
    expect(decodeJson(encodeJson(root, 'args'))).toEqual({ holder: { text: '{"holder":{"text":"nested"}}' } });
  });

  it('checks only own properties, as JSON writes only those', () => {
    const withInherited = Object.create({ skipped: () => 0 }) as { own: number };
    withInherited.own = 1;
    expect(decodeJson(encodeJson(withInherited, 'args'))).toEqual({ own: 1 });
  });

  it('drops undefined object properties, as JSON does for optional fields', () => {
    expect(decodeJson(encodeJson({ a: 1, b: undefined }, 'args'))).toEqual({ a: 1 });
  });
});
