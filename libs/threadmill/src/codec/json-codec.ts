import { PayloadSerializationError } from '../errors/payload-serialization.error.js';

/**
 * The JSON codec of task arguments and return values.
 *
 * Plain JSON silently changes some values (`undefined` in an array becomes
 * `null`, a Map becomes `{}`, a BigInt throws late, a Date comes back as a
 * string). Threadmill refuses those values up front with the path of the
 * offending value, and round-trips `Date` as a tagged `{"$date": ISO}` object.
 */

const DATE_TAG = '$date';

function typeName(value: object): string {
  return value.constructor?.name ?? 'Object';
}

const REFUSED: ReadonlyMap<Function, string> = new Map<Function, string>([
  [Map, 'convert it to an object or an array of entries'],
  [Set, 'convert it to an array'],
  [WeakMap, 'it cannot be stored'],
  [WeakSet, 'it cannot be stored'],
  [RegExp, 'store its source string instead'],
  [Promise, 'await it before enqueueing'],
  [Error, 'store its message instead'],
]);

/** Walks `value` and throws on anything JSON cannot carry faithfully; returns whether it holds a Date. */
function check(value: unknown, path: string, ancestors: object[]): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return false;
    case 'number':
      if (!Number.isFinite(value)) {
        throw new PayloadSerializationError(
          path,
          `is ${value}, which JSON cannot represent; use null or a finite number.`,
        );
      }
      return false;
    case 'bigint':
      throw new PayloadSerializationError(path, 'is a BigInt, which JSON cannot represent; pass it as a string.');
    case 'function':
      throw new PayloadSerializationError(path, 'is a function, which cannot be stored; pass data, not code.');
    case 'symbol':
      throw new PayloadSerializationError(path, 'is a symbol, which cannot be stored; pass a string.');
    case 'undefined':
      return false;
  }
  if (value === null) return false;
  const object = value as object;
  if (object instanceof Date) {
    if (Number.isNaN(object.getTime())) {
      throw new PayloadSerializationError(path, 'is an invalid Date; pass a valid Date or null.');
    }
    return true;
  }
  if (ancestors.includes(object)) {
    throw new PayloadSerializationError(
      path,
      'refers back to an enclosing object (a cycle); JSON cannot store cycles.',
    );
  }
  for (const [type, advice] of REFUSED) {
    if (object instanceof type) {
      throw new PayloadSerializationError(path, `is a ${typeName(object)}, which JSON does not preserve; ${advice}.`);
    }
  }
  if (ArrayBuffer.isView(object) || object instanceof ArrayBuffer) {
    throw new PayloadSerializationError(path, `is a ${typeName(object)}; encode binary data as a base64 string.`);
  }
  ancestors.push(object);
  let hasDate = false;
  if (Array.isArray(object)) {
    for (let i = 0; i < object.length; i++) {
      if (object[i] === undefined) {
        throw new PayloadSerializationError(
          `${path}[${i}]`,
          'is undefined inside an array, which JSON turns into null; pass null instead.',
        );
      }
      hasDate = check(object[i], `${path}[${i}]`, ancestors) || hasDate;
    }
  } else {
    if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
      ancestors.pop();
      return false; // the object says how it serializes itself
    }
    for (const key of Object.keys(object)) {
      hasDate = check((object as Record<string, unknown>)[key], `${path}.${key}`, ancestors) || hasDate;
    }
  }
  ancestors.pop();
  return hasDate;
}

function tagDates(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  return raw instanceof Date ? { [DATE_TAG]: raw.toISOString() } : value;
}

function untagDates(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const tagged = (value as Record<string, unknown>)[DATE_TAG];
    if (typeof tagged === 'string' && Object.keys(value).length === 1) return new Date(tagged);
  }
  return value;
}

/**
 * Encodes `value` as JSON, refusing values JSON would change.
 * @param path how to name the value in an error, e.g. `args` or `return value`
 * @throws PayloadSerializationError naming the path of the first bad value
 */
export function encodeJson(value: unknown, path: string): string {
  const hasDate = check(value, path, []);
  return hasDate ? JSON.stringify(value, tagDates) : JSON.stringify(value);
}

/** Decodes what {@link encodeJson} produced, turning tagged dates back into `Date`s. */
export function decodeJson<T = unknown>(text: string): T {
  return text.includes(`"${DATE_TAG}"`) ? JSON.parse(text, untagDates) : JSON.parse(text);
}
