import type { Type } from '@nestjs/common';
import { describeValue } from '../codec/describe-value.js';

/** What one argument position must hold; positions without a rule take anything. */
interface ArgumentRule {
  readonly index: number;
  /** `number`, `string`, `boolean`: a `typeof`; `dto`: any non-null value (class-validator checks the rest). */
  readonly kind: 'number' | 'string' | 'boolean' | 'dto';
  /** What the error says was expected (`a number`, `a SendEmailDto object`). */
  readonly expected: string;
}

/**
 * The arguments a task method accepts, read once at discovery from its
 * function and its `design:paramtypes`, and checked at every enqueue.
 *
 * The rule, and why:
 * - Required: the parameters before the first one with a default value or
 *   a rest parameter (JavaScript's `Function.length`), less a trailing
 *   `TaskContext` (the worker passes it). TypeScript erases `x?: T`, so
 *   such a parameter counts as required: give it a default value
 *   (`x: T | undefined = undefined`) to make it optional.
 * - At most: the declared parameters, less a trailing `TaskContext`; any
 *   number with a rest parameter (`...xs: T[]`).
 * - Types: a parameter declared `number`, `string` or `boolean` must get
 *   one (an optional one may be left out); a DTO parameter must get a
 *   value, which class-validator then validates. Other types (unions,
 *   interfaces, `object`, arrays) reach the metadata as `Object` or
 *   `Array` and are not checked.
 */
export interface TaskSignature {
  /** Fewest arguments a run may carry. */
  readonly required: number;
  /** Most arguments a run may carry; `Infinity` with a rest parameter or an unreadable parameter list. */
  readonly most: number;
  /** Parameter names by position, where the source could be read (`undefined` for a destructured one). */
  readonly names: readonly (string | undefined)[];
  /** Only the positions that have something to check. */
  readonly rules: readonly ArgumentRule[];
}

const PRIMITIVES = new Map<unknown, ArgumentRule['kind']>([
  [Number, 'number'],
  [String, 'string'],
  [Boolean, 'boolean'],
]);

/**
 * Reads a method's signature.
 * @param method the undecorated method (its source gives the parameter names and a rest parameter)
 * @param paramTypes its `design:paramtypes` (empty when the class was not compiled with decorator metadata)
 * @param dtoTypes the DTO class of each parameter, or undefined (see `argumentTypes`)
 * @param contextIndex position of its `TaskContext` parameter, or -1
 */
export function taskSignature(
  method: Function,
  paramTypes: readonly unknown[],
  dtoTypes: readonly (Type | undefined)[],
  contextIndex: number,
): TaskSignature {
  let parameters = readParameters(method);
  // A list that disagrees with the compiler's metadata was misread: trust the metadata.
  if (parameters && paramTypes.length > 0 && parameters.names.length !== paramTypes.length) parameters = undefined;
  const declared = parameters?.names.length ?? paramTypes.length;
  // The context is the worker's to pass: a trailing one is neither required nor counted.
  const trailingContext = contextIndex >= 0 && contextIndex === declared - 1;
  const required = trailingContext ? Math.min(method.length, contextIndex) : method.length;
  const most = parameters && !parameters.rest ? declared - (trailingContext ? 1 : 0) : Infinity;
  const rules: ArgumentRule[] = [];
  // A rest parameter's type (Array) describes its elements together: not checked.
  const typed = parameters?.rest ? paramTypes.length - 1 : paramTypes.length;
  for (let index = 0; index < typed; index++) {
    if (index === contextIndex) continue;
    const dto = dtoTypes[index];
    if (dto) {
      rules.push({ index, kind: 'dto', expected: `a ${dto.name} object` });
      continue;
    }
    const kind = PRIMITIVES.get(paramTypes[index]);
    if (kind) rules.push({ index, kind, expected: `a ${kind}` });
  }
  return { required, most, names: parameters?.names ?? [], rules };
}

/**
 * Why `args` does not fit `signature`, or undefined when it does: one
 * sentence naming the position, the parameter and what was expected.
 * Costs a length check and a `typeof` per checked position.
 */
export function signatureProblem(signature: TaskSignature, args: readonly unknown[]): string | undefined {
  const { required, most, rules } = signature;
  if (args.length < required) {
    return (
      `${missing(signature, args.length)}. It takes ${arity(signature)}, got ${args.length}. ` +
      "Pass every required argument; to make a parameter optional, give it a default value (TypeScript's `x?: T` " +
      'is erased before run time, so write `x: T | undefined = undefined`).'
    );
  }
  if (args.length > most) {
    return `it takes ${arity(signature)}, got ${args.length}. Pass only the task's own arguments (never its TaskContext).`;
  }
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i]!;
    const value = args[rule.index];
    if (rule.kind === 'dto') {
      // class-validator checks the value's fields and shape afterwards.
      if (value !== undefined && value !== null) continue;
      if (rule.index >= required && value === undefined) continue;
    } else if (typeof value === rule.kind || (value === undefined && rule.index >= required)) {
      continue;
    }
    return `${position(signature, rule.index)} must be ${rule.expected}, got ${describeValue(value)}. Fix the arguments.`;
  }
  return undefined;
}

function position({ names }: TaskSignature, index: number): string {
  const name = names[index];
  return name ? `args[${index}] (${name})` : `args[${index}]`;
}

function missing(signature: TaskSignature, given: number): string {
  const absent: string[] = [];
  for (let i = given; i < signature.required; i++) absent.push(position(signature, i));
  return `${absent.join(', ')} ${absent.length > 1 ? 'are' : 'is'} missing`;
}

const count = (n: number) => `${n} argument${n === 1 ? '' : 's'}`;

function arity({ required, most }: TaskSignature): string {
  if (most === required) return count(required);
  return most === Infinity ? `at least ${count(required)}` : `${required} to ${count(most)}`;
}

/**
 * The names of a function's parameters and whether the last is a rest
 * parameter, read from its source; undefined when the source cannot be read
 * (a native or bound function). A destructured parameter has no name.
 */
export function readParameters(fn: Function): { names: (string | undefined)[]; rest: boolean } | undefined {
  const source = Function.prototype.toString.call(fn);
  const open = source.indexOf('(');
  if (open < 0 || source.includes('[native code]')) return undefined;
  const parts: string[] = [];
  let depth = 0;
  let start = open + 1;
  let quote: string | undefined;
  for (let i = open; i < source.length; i++) {
    const c = source[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '/' && source[i + 1] === '*') {
      i = source.indexOf('*/', i + 2) + 1;
      if (i === 0) return undefined;
    } else if (c === '/' && source[i + 1] === '/') {
      i = source.indexOf('\n', i);
      if (i < 0) return undefined;
    } else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (--depth === 0) {
        parts.push(source.slice(start, i));
        const trimmed = parts.map((part) => part.trim()).filter((part) => part !== '');
        return {
          names: trimmed.map((part) => /^(?:\.\.\.)?\s*([A-Za-z_$][\w$]*)/.exec(part)?.[1]),
          rest: trimmed.at(-1)?.startsWith('...') ?? false,
        };
      }
    } else if (c === ',' && depth === 1) {
      parts.push(source.slice(start, i));
      start = i + 1;
    }
  }
  return undefined;
}
