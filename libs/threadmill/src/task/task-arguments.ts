import type { Type } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import { TaskContext } from './task-context.js';

/** Parameter types that are values, not DTO classes to validate. */
const PLAIN_TYPES = new Set<unknown>([
  String,
  Number,
  Boolean,
  Object,
  Array,
  Date,
  Function,
  Promise,
  Map,
  Set,
  Symbol,
  BigInt,
  TaskContext,
  undefined,
]);

/**
 * The DTO class of each parameter (from `design:paramtypes`), or undefined
 * for a plain value. A DTO parameter's argument is validated with
 * class-validator at enqueue and rehydrated (class-transformer) and validated
 * again before execution.
 */
export function argumentTypes(paramTypes: readonly unknown[]): (Type | undefined)[] {
  return paramTypes.map((type) =>
    typeof type === 'function' && !PLAIN_TYPES.has(type) && type.prototype ? (type as Type) : undefined,
  );
}

function describeErrors(errors: ValidationError[], parent = ''): string[] {
  return errors.flatMap((error) => {
    const path = parent ? `${parent}.${error.property}` : error.property;
    return [...Object.values(error.constraints ?? {}), ...describeErrors(error.children ?? [], path)].map((message) =>
      // class-validator messages start with the property name; nested ones need the path.
      parent && message.startsWith(error.property) ? `${parent}.${message}` : message,
    );
  });
}

/**
 * Turns the DTO arguments of `args` into instances of their classes and
 * validates them.
 * @returns the arguments with DTOs rehydrated, and one problem per invalid
 * DTO argument (`args[0] (SendEmailDto): email must be an email`)
 */
export function checkArguments(
  types: readonly (Type | undefined)[],
  args: readonly unknown[],
): { args: unknown[]; problems: string[] } {
  const rehydrated = [...args];
  const problems: string[] = [];
  types.forEach((type, i) => {
    const value = args[i];
    // An omitted optional argument has nothing to validate.
    if (!type || value === undefined || value === null) return;
    if (typeof value !== 'object' || Array.isArray(value)) {
      problems.push(
        `args[${i}] (${type.name}) must be an object, got ${Array.isArray(value) ? 'an array' : typeof value}`,
      );
      return;
    }
    const instance = value instanceof type ? value : plainToInstance(type, value);
    const errors = validateSync(instance as object, { forbidUnknownValues: false });
    if (errors.length > 0) problems.push(`args[${i}] (${type.name}): ${describeErrors(errors).join('; ')}`);
    rehydrated[i] = instance;
  });
  return { args: rehydrated, problems };
}
