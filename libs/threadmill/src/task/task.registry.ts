import { DuplicateTaskError } from '../errors/duplicate-task.error.js';
import { UnknownTaskError } from '../errors/unknown-task.error.js';
import { WrongBackendError } from '../errors/wrong-backend.error.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import type { ScheduleDeclaration } from '../backend/schedule-store.js';
import { InvalidScheduleError } from '../errors/invalid-schedule.error.js';
import type { TaskDefinition } from './task-definition.js';

/**
 * Every task of one backend of the application, by name and by (class,
 * method). It knows the application's other backends' registries too, so
 * that a task enqueued through the wrong backend's queue is refused rather
 * than stored where its worker never looks.
 */
export class TaskRegistry {
  private readonly byName = new Map<string, TaskDefinition>();
  private readonly byMethod = new Map<Function, Map<string, TaskDefinition>>();
  private others: readonly TaskRegistry[] = [];
  /** Schedules the code declares (`@Task({ schedule })`), by id, with the site that declares each. */
  private readonly declared = new Map<string, { declaration: ScheduleDeclaration; site: string }>();

  /** @param backend the name of the backend whose tasks it holds */
  constructor(readonly backend: string = DEFAULT_BACKEND) {}

  /** Links the registries of the application's other backends (at boot). */
  link(others: readonly TaskRegistry[]): void {
    this.others = others.filter((other) => other !== this);
  }

  /** The names of every backend of the application, this one included. */
  backends(): string[] {
    return [this.backend, ...this.others.map((other) => other.backend)].sort();
  }

  /** @throws WrongBackendError when another backend of the application registers task `name` */
  checkNotElsewhere(name: string): void {
    const owner = this.others.find((other) => other.byName.has(name));
    if (owner) throw new WrongBackendError(name, owner.backend, this.backend);
  }

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

  /**
   * The task declared by `target.prototype[method]`.
   * @throws WrongBackendError when another backend of the application registers it
   * @throws UnknownTaskError when no backend does
   */
  getByMethod(target: Function, method: string): TaskDefinition {
    const definition = this.findByMethod(target, method);
    if (definition) return definition;
    for (const other of this.others) {
      const elsewhere = other.findByMethod(target, method);
      if (elsewhere) throw new WrongBackendError(elsewhere.name, other.backend, this.backend);
    }
    throw new UnknownTaskError(`${target.name}#${method}`, this.names());
  }

  private findByMethod(target: Function, method: string): TaskDefinition | undefined {
    for (let type: Function | null = target; type && type !== Function.prototype; type = Object.getPrototypeOf(type)) {
      const definition = this.byMethod.get(type)?.get(method);
      if (definition) return definition;
    }
    return undefined;
  }

  /** Records a schedule the code declares. @throws InvalidScheduleError when another task declares its id */
  declareSchedule(declaration: ScheduleDeclaration, site: string): void {
    const existing = this.declared.get(declaration.id);
    if (existing) {
      throw new InvalidScheduleError(
        declaration.id,
        `both ${existing.site} and ${site} declare it; give one of them another schedule id ({ schedule: { id } }).`,
      );
    }
    this.declared.set(declaration.id, { declaration, site });
  }

  /** The schedules the code declares. */
  schedules(): ScheduleDeclaration[] {
    return [...this.declared.values()].map((entry) => entry.declaration);
  }

  names(): string[] {
    return [...this.byName.keys()].sort();
  }

  all(): TaskDefinition[] {
    return [...this.byName.values()];
  }
}
