import { Injectable } from '@nestjs/common';
import { DuplicateTaskError } from '../errors/duplicate-task.error.js';
import { UnknownTaskError } from '../errors/unknown-task.error.js';
import type { TaskDefinition } from './task-definition.js';

/** Every task of the application, by name and by (class, method). */
@Injectable()
export class TaskRegistry {
  private readonly byName = new Map<string, TaskDefinition>();
  private readonly byMethod = new Map<Function, Map<string, TaskDefinition>>();

  register(definition: TaskDefinition): void {
    const existing = this.byName.get(definition.name);
    if (existing) throw new DuplicateTaskError(definition.name, existing.site, definition.site);
    this.byName.set(definition.name, definition);
    let methods = this.byMethod.get(definition.target);
    if (!methods) this.byMethod.set(definition.target, (methods = new Map()));
    methods.set(definition.methodName, definition);
  }

  /** The task called `name`, or undefined. */
  find(name: string): TaskDefinition | undefined {
    return this.byName.get(name);
  }

  /** The task called `name`; throws {@link UnknownTaskError} naming the known ones. */
  get(name: string): TaskDefinition {
    const definition = this.byName.get(name);
    if (!definition) throw new UnknownTaskError(name, this.names());
    return definition;
  }

  /** The task declared by `target.prototype[method]`; throws {@link UnknownTaskError}. */
  getByMethod(target: Function, method: string): TaskDefinition {
    for (let type: Function | null = target; type && type !== Function.prototype; type = Object.getPrototypeOf(type)) {
      const definition = this.byMethod.get(type)?.get(method);
      if (definition) return definition;
    }
    throw new UnknownTaskError(`${target.name}#${method}`, this.names());
  }

  names(): string[] {
    return [...this.byName.keys()].sort();
  }

  all(): TaskDefinition[] {
    return [...this.byName.values()];
  }
}
