import { PayloadSerializationError } from '@threadmill/nestjs';
import { describe, expect, it } from 'vitest';
import { decodeJson, encodeJson } from '../../libs/threadmill/src/codec/json-codec.js';

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

  it('drops undefined object properties, as JSON does for optional fields', () => {
    expect(decodeJson(encodeJson({ a: 1, b: undefined }, 'args'))).toEqual({ a: 1 });
  });
});
