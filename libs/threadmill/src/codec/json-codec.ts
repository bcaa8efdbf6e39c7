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

/**
 * A value refused during the walk. It carries the path below the value the
 * walk started from, which each level prepends to as the error travels up,
 * so that a walk that refuses nothing builds no path strings.
 */
class Refused {
  constructor(
    public below: string,
    readonly reason: string,
  ) {}
}

/**
 * What an object that is not a plain object or array may not be, and why.
 * Plain ones, nearly every value of a payload, skip these checks.
 */
function refuseSpecial(object: object): boolean {
  if (object instanceof Date) {
    if (Number.isNaN(object.getTime())) throw new Refused('', 'is an invalid Date; pass a valid Date or null.');
    return true;
  }
  for (const [type, advice] of REFUSED) {
    if (object instanceof type) {
      throw new Refused('', `is a ${typeName(object)}, which JSON does not preserve; ${advice}.`);
    }
  }
  if (ArrayBuffer.isView(object) || object instanceof ArrayBuffer) {
    throw new Refused('', `is a ${typeName(object)}; encode binary data as a base64 string.`);
  }
  return false;
}

/**
 * The objects enclosing the value being checked, outermost first: one stack
 * for every walk, as an array made per walk left garbage with every payload
 * once its first push grew it (docs/optimisations.md, step 42). A walk
 * entered while another is under way (a getter that encodes) searches and
 * leaves only its own part, from `base` on.
 */
const ancestors: object[] = [];

/** Walks `value` and throws `Refused` on anything JSON cannot carry faithfully; returns whether it holds a Date. */
function check(value: unknown, base: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return false;
    case 'number':
      if (!Number.isFinite(value)) {
        throw new Refused('', `is ${value}, which JSON cannot represent; use null or a finite number.`);
      }
      return false;
    case 'bigint':
      throw new Refused('', 'is a BigInt, which JSON cannot represent; pass it as a string.');
    case 'function':
      throw new Refused('', 'is a function, which cannot be stored; pass data, not code.');
    case 'symbol':
      throw new Refused('', 'is a symbol, which cannot be stored; pass a string.');
  }
  if (value === null) return false;
  const object = value as object;
  const prototype: unknown = Object.getPrototypeOf(object);
  if (prototype !== Object.prototype && prototype !== Array.prototype && prototype !== null) {
    if (refuseSpecial(object)) return true;
  }
  if (ancestors.indexOf(object, base) !== -1) {
    throw new Refused('', 'refers back to an enclosing object (a cycle); JSON cannot store cycles.');
  }
  ancestors.push(object);
  let hasDate = false;
  if (Array.isArray(object)) {
    for (let i = 0; i < object.length; i++) {
      const item: unknown = object[i];
      try {
        if (item === undefined) {
          throw new Refused('', 'is undefined inside an array, which JSON turns into null; pass null instead.');
        }
        hasDate = check(item, base) || hasDate;
      } catch (error) {
        if (error instanceof Refused) error.below = `[${i}]${error.below}`;
        throw error;
      }
    }
  } else {
    if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
      ancestors.pop();
      return false; // the object says how it serializes itself
    }
    // for-in with an own-key test reads what Object.keys lists (what
    // JSON.stringify writes) without building an array of keys per object.
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue;
      try {
        hasDate = check((object as Record<string, unknown>)[key], base) || hasDate;
      } catch (error) {
        if (error instanceof Refused) error.below = `.${key}${error.below}`;
        throw error;
      }
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
  let hasDate: boolean;
  const base = ancestors.length;
  try {
    hasDate = check(value, base);
  } catch (error) {
    if (error instanceof Refused) throw new PayloadSerializationError(path + error.below, error.reason);
    throw error;
  } finally {
    // A refused value leaves its enclosing objects on the stack.
    ancestors.length = base;
  }
  return hasDate ? JSON.stringify(value, tagDates) : JSON.stringify(value);
}

/** Decodes what {@link encodeJson} produced, turning tagged dates back into `Date`s. */
export function decodeJson<T = unknown>(text: string): T {
  return text.includes(`"${DATE_TAG}"`) ? JSON.parse(text, untagDates) : JSON.parse(text);
}
