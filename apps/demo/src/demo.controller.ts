import {
  BadGatewayException,
  Body,
  Controller,
  GatewayTimeoutException,
  Get,
  Inject,
  Param,
  ParseUUIDPipe,
  Post,
  Query,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { QuoteRequest, RequestQuote, type Quote } from '@threadmill/demo-tasks';
import { RunFailedError, TaskQueue, type TaskResult } from '@threadmill/nestjs';
import type { ThreadmillClient } from '@threadmill/nestjs/microservices';
import { IsInt, Max, Min } from 'class-validator';
import { firstValueFrom, timeout, TimeoutError } from 'rxjs';
import { DemoBatchService } from './demo-batch.service.js';
import { TASKS_CLIENT } from './tasks-client.js';

class StartBatchDto {
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  count!: number;
}

/** How long a quote waits for the worker's answer: no worker running should not hang the request. */
const QUOTE_TIMEOUT_MS = 10_000;

/** A quote and how long the worker took to answer it. */
export interface QuoteAnswer {
  readonly quote: Quote;
  /** From `send()` to the answer: the enqueue, the worker's claim and run, and the result's way back. */
  readonly roundTripMs: number;
}

/** The demo API: the HTTP face of a producer application. */
@Controller()
export class DemoController implements OnApplicationBootstrap {
  constructor(
    private readonly batches: DemoBatchService,
    @Inject(TASKS_CLIENT) private readonly client: ThreadmillClient,
    private readonly tasks: TaskQueue,
  ) {}

  /** Connects the client at boot rather than in the first request, which would otherwise wait for it. */
  async onApplicationBootstrap(): Promise<void> {
    await this.client.connect();
  }

  @Post('demo/batches')
  start(@Body() body: StartBatchDto) {
    return this.batches.start(body.count);
  }

  @Get('demo/batches/:id')
  progress(@Param('id', ParseUUIDPipe) id: string) {
    return this.batches.progress(id);
  }

  @Get('demo/batches/:id/summary')
  summary(@Param('id', ParseUUIDPipe) id: string) {
    return this.batches.summary(id);
  }

  /** One run's result; an unknown id answers 404 (ThreadmillExceptionFilter). */
  @Get('demo/runs/:id')
  run(@Param('id') id: string): Promise<TaskResult> {
    return this.tasks.getResult(id);
  }

  /** Request/response through the worker: `GET /demo/quote?plan=team&seats=25&months=12`. */
  @Get('demo/quote')
  async quote(@Query() request: QuoteRequest): Promise<QuoteAnswer> {
    const started = performance.now();
    try {
      const quote = await firstValueFrom(this.client.send(RequestQuote, [request]).pipe(timeout(QUOTE_TIMEOUT_MS)));
      return { quote, roundTripMs: Math.round((performance.now() - started) * 10) / 10 };
    } catch (error) {
      if (error instanceof RunFailedError) throw new BadGatewayException(error.message);
      if (error instanceof TimeoutError) {
        throw new GatewayTimeoutException(`No worker answered the quote within ${QUOTE_TIMEOUT_MS / 1000} s.`);
      }
      throw error;
    }
  }
}
