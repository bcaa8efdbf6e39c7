import {
  Controller,
  Injectable,
  UseInterceptors,
  UsePipes,
  ValidationPipe,
  type CallHandler,
  type ExecutionContext,
  type INestApplication,
  type NestInterceptor,
  type PipeTransform,
  type Type,
} from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { Test, type TestingModule } from '@nestjs/testing';
import { ExponentialBackoff, TaskQueue, TaskStatus } from '@threadmill/nestjs';
import { ThreadmillContext } from '@threadmill/nestjs/microservices';
import { ThreadmillTesting, ThreadmillTestingModule } from '@threadmill/nestjs/testing';
import { IsInt, Min } from 'class-validator';
import { map, of, type Observable } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';

/** What the handlers, the interceptor and the pipe saw, in order. */
@Injectable()
class Seen {
  readonly calls: string[] = [];
}

/** Wraps a handler's value, recording the context it ran in. */
@Injectable()
class TagInterceptor implements NestInterceptor {
  constructor(private readonly seen: Seen) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const run = context.switchToRpc().getContext<ThreadmillContext>();
    this.seen.calls.push(`interceptor ${context.getType()} ${run.pattern} attempt ${run.attempt}`);
    return next.handle().pipe(map((value: unknown) => ({ tagged: value })));
  }
}

class OrderDto {
  @IsInt()
  @Min(1)
  quantity!: number;
}

class OrderFailed extends Error {}

/** Handlers with an interceptor (the class's) and a pipe (ValidationPipe, transforming). */
@Controller()
@UseInterceptors(TagInterceptor)
@UsePipes(new ValidationPipe({ transform: true }))
class OrdersController {
  constructor(private readonly seen: Seen) {}

  @MessagePattern('orders.price', { queue: 'orders' })
  price(@Payload() order: OrderDto, @Ctx() context: ThreadmillContext) {
    this.seen.calls.push(`price ${order.quantity}`);
    return { total: order.quantity * 3, dto: order instanceof OrderDto, run: context.id };
  }

  /** Fails while the attempt is at most the quantity, then succeeds. */
  @EventPattern<string>('orders.placed', { retry: new ExponentialBackoff({ baseDelayMs: 10, maxRetries: 2 }) })
  placed(@Payload() order: OrderDto, @Ctx() context: ThreadmillContext): Promise<string> {
    this.seen.calls.push(`placed attempt ${context.attempt}`);
    if (context.attempt <= order.quantity) return Promise.reject(new OrderFailed(`attempt ${context.attempt} fails`));
    return Promise.resolve(`placed on attempt ${context.attempt}`);
  }
}

/** Handlers with no enhancer of their own. */
@Controller()
class PlainController {
  @MessagePattern('plain.double')
  double(@Payload('value') value: number): Observable<number> {
    return of(value, value * 2);
  }

  @EventPattern<string>('plain.fails')
  fails(@Payload() message: string): never {
    throw new OrderFailed(message);
  }
}

/** Doubles a number it is given, as a global pipe. */
class DoublingPipe implements PipeTransform {
  transform(value: unknown): unknown {
    return typeof value === 'number' ? value * 2 : value;
  }
}

let moduleRef: TestingModule | undefined;
let app: INestApplication | undefined;
afterEach(async () => {
  await app?.close();
  await moduleRef?.close();
  app = undefined;
  moduleRef = undefined;
});

async function boot(mode: 'immediate' | 'manual', controllers: Type[], providers: unknown[] = []) {
  moduleRef = await Test.createTestingModule({
    imports: [ThreadmillTestingModule.forRoot({ mode })],
    controllers,
    providers: [Seen, TagInterceptor, ...(providers as Type[])],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return { queue: moduleRef.get(TaskQueue), testing: moduleRef.get(ThreadmillTesting), seen: moduleRef.get(Seen) };
}

describe('Nest handlers in ThreadmillTestingModule, without a ThreadmillServer', () => {
  it("runs a @MessagePattern handler through its pipe and interceptor: SUCCESSFUL with the interceptor's value", async () => {
    const { queue, seen } = await boot('immediate', [OrdersController]);
    const { id } = await queue.enqueue('orders.price', [{ quantity: 2 }]);
    expect(await queue.getResult(id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      queue: 'orders',
      attempts: 1,
      returnValue: { tagged: { total: 6, dto: true, run: id } },
    });
    expect(seen.calls).toEqual(['interceptor rpc orders.price attempt 1', 'price 2']);
  });

  it('retries a failing @EventPattern handler by its policy, then ends it FAILED when the policy gives up', async () => {
    const { queue, seen } = await boot('immediate', [OrdersController]);
    const flaky = await queue.enqueue('orders.placed', [{ quantity: 1 }]);
    const recovered = await queue.getResult(flaky.id);
    expect(recovered).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      attempts: 2,
      returnValue: { tagged: 'placed on attempt 2' },
    });
    expect(recovered.errors.map((error) => [error.errorClass, error.message])).toEqual([
      ['OrderFailed', 'attempt 1 fails'],
    ]);

    seen.calls.length = 0;
    const doomed = await queue.enqueue('orders.placed', [{ quantity: 5 }]);
    const failed = await queue.getResult(doomed.id);
    expect(failed).toMatchObject({ status: TaskStatus.FAILED, attempts: 3 });
    expect(failed.errors.map((error) => error.message)).toEqual([
      'attempt 1 fails',
      'attempt 2 fails',
      'attempt 3 fails',
    ]);
    expect(seen.calls.filter((call) => call.startsWith('placed'))).toEqual([
      'placed attempt 1',
      'placed attempt 2',
      'placed attempt 3',
    ]);
  });

  it('ends a run whose payload the pipe rejects FAILED at once, the handler never called', async () => {
    const { queue, seen } = await boot('immediate', [OrdersController]);
    const { id } = await queue.enqueue('orders.placed', [{ quantity: 0 }]);
    const result = await queue.getResult(id);
    expect(result).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
    expect(result.errors[0]).toMatchObject({ errorClass: 'BadRequestException' });
    expect(result.errors[0]!.message).toMatch(/quantity must not be less than 1/);
    expect(seen.calls.filter((call) => call.startsWith('placed'))).toEqual([]);
  });

  it('records handler runs in manual mode in the queue their extras name, and runs them with runAll', async () => {
    const { queue, testing } = await boot('manual', [OrdersController]);
    await queue.enqueue('orders.price', [{ quantity: 4 }]);
    expect(testing.enqueued('orders.price').map((run) => [run.queue, run.status, run.args])).toEqual([
      ['orders', TaskStatus.READY, [{ quantity: 4 }]],
    ]);
    const [ran] = await testing.runAll();
    expect(ran).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: { tagged: { total: 12, dto: true } } });
  });

  it("runs a handler with no enhancer: an Observable's last value, and a thrown error FAILED without a policy", async () => {
    const { queue } = await boot('immediate', [PlainController]);
    const doubled = await queue.enqueue('plain.double', [{ value: 21 }]);
    expect(await queue.getResult(doubled.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 42 });
    const failed = await queue.enqueue('plain.fails', ['out of stock']);
    expect(await queue.getResult(failed.id)).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
    expect((await queue.getResult(failed.id)).errors[0]).toMatchObject({
      errorClass: 'OrderFailed',
      message: 'out of stock',
    });
  });

  it('applies a global pipe (app.useGlobalPipes) to a handler that binds none', async () => {
    moduleRef = await Test.createTestingModule({
      imports: [ThreadmillTestingModule.forRoot({ mode: 'immediate' })],
      controllers: [PlainController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useGlobalPipes(new DoublingPipe());
    await app.init();
    const queue = app.get(TaskQueue);
    const { id } = await queue.enqueue('plain.double', [{ value: 5 }]);
    // @Payload('value') is 5, doubled by the pipe, then by the handler.
    expect(await queue.getResult(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 20 });
  });

  it('applies a global interceptor (APP_INTERCEPTOR) to a handler that binds none', async () => {
    const { queue, seen } = await boot(
      'immediate',
      [PlainController],
      [{ provide: APP_INTERCEPTOR, useClass: TagInterceptor }],
    );
    const { id } = await queue.enqueue('plain.double', [{ value: 5 }]);
    expect(await queue.getResult(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: { tagged: 10 } });
    expect(seen.calls).toEqual(['interceptor rpc plain.double attempt 1']);
  });
});
