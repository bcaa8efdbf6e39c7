import { ClientsModule } from '@nestjs/microservices';
import { demoBackendOptions } from '@threadmill/demo-tasks';
import { ThreadmillClient } from '@threadmill/nestjs/microservices';

/** Injection token of the demo API's `ThreadmillClient`: `@Inject(TASKS_CLIENT)`. */
export const TASKS_CLIENT = 'TASKS';

/**
 * The demo API's Nest `ClientProxy` to the worker: `send()` enqueues a run
 * and emits what its handler returns. Same backend as the API's
 * `ThreadmillModule`, with connections of its own.
 */
export const TasksClientModule = ClientsModule.register([
  { name: TASKS_CLIENT, customClass: ThreadmillClient, options: demoBackendOptions() },
]);
