import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { WrongBackendError } from '../errors/wrong-backend.error.js';
import { findContract, TaskContract } from '../task/task-contract.js';
import type { TaskDefinition } from '../task/task-definition.js';
import type { ContractSettings } from '../task/task-settings.js';
import type { TaskRegistry } from '../task/task.registry.js';
import { describeValue } from '../codec/describe-value.js';
import type { EnqueueManyItem } from './enqueue-options.interface.js';

/** What an enqueue needs to know of a task: how to store its runs. */
export type EnqueueTarget = Pick<
  TaskDefinition,
  'kind' | 'name' | 'queue' | 'priority' | 'leaseTtlMs' | 'argumentTypes' | 'signature' | 'limit'
> & {
  /** Another application's task, not registered here (for the hint of a queue error). */
  readonly foreign?: true;
};

/** A task of another application: nothing to validate its arguments against. */
const NO_TYPES: readonly never[] = [];

/**
 * The task an enqueue item names: a class and method of this application, a
 * contract, or a name. A contract or a name that this application does not
 * register is another application's task (a worker's, enqueued by a producer
 * that does not import its code): its runs are stored with the contract's
 * queue, priority and lease, or by a bare name in the queue the enqueue
 * gives, else `'default'`.
 */
export class EnqueueTargets {
  /** Targets of names this application does not register, made once per name. */
  private readonly elsewhere = new Map<string, EnqueueTarget>();

  constructor(private readonly registry: TaskRegistry) {}

  /** @throws UnknownTaskError for a class method that is no task; InvalidEnqueueError for a bad name */
  resolve(item: EnqueueManyItem): EnqueueTarget {
    const { task } = item;
    if (typeof task === 'function') return this.registry.getByMethod(task, (item as { method: string }).method);
    if (task instanceof TaskContract) {
      if (task.settings.backend !== this.registry.backend) {
        throw new WrongBackendError(task.name, task.settings.backend, this.registry.backend);
      }
      return this.registry.find(task.name) ?? this.foreign(task.name, task.settings);
    }
    if (typeof task !== 'string' || task === '' || task.length > 200) {
      throw new InvalidEnqueueError(
        'enqueue',
        `task must be a task class (with its method), a contract from defineTask(), or a task name of 1-200 characters, got ${describeValue(task)}.`,
      );
    }
    return this.registry.find(task) ?? this.foreignByName(task);
  }

  /** A name no task of this backend has: another backend's task (refused), or another application's. */
  private foreignByName(name: string): EnqueueTarget {
    this.registry.checkNotElsewhere(name);
    const contract = findContract(name);
    if (contract && contract.settings.backend !== this.registry.backend) {
      throw new WrongBackendError(name, contract.settings.backend, this.registry.backend);
    }
    return this.foreign(name, contract?.settings);
  }

  private foreign(name: string, settings: ContractSettings | undefined): EnqueueTarget {
    let target = this.elsewhere.get(name);
    if (!target) {
      target = {
        kind: 'method',
        name,
        queue: settings?.queue ?? 'default',
        priority: settings?.priority ?? 0,
        leaseTtlMs: settings?.leaseTtlMs,
        argumentTypes: NO_TYPES,
        foreign: true,
      };
      this.elsewhere.set(name, target);
    }
    return target;
  }
}
