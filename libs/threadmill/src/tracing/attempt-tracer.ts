import {
  type Context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { LeasedRun, Outcome } from '../backend/task-backend.js';
import type { RunPayload } from '../codec/run-payload.js';
import { tracerRegistered } from './tracer-registered.js';

/** The tracer's name: the instrumentation scope users filter on. */
export const TRACER_NAME = '@threadmill/nestjs';

/** The options of an attempt's span that is its producer's child (or has none). */
const CONSUMER: SpanOptions = { kind: SpanKind.CONSUMER };

/** A recording span of one attempt, and the context its code runs in (the span active). */
export interface AttemptSpan {
  readonly span: Span;
  readonly context: Context;
}

/**
 * Makes each attempt a span, through `@opentelemetry/api` alone: the
 * application brings (or not) the SDK. The span is a CONSUMER span named
 * `process <task>`, a child of the producer's span whose context the run's
 * envelope carries, or, with `traceLinks`, the root of a trace of its own
 * linked to it. With no tracer provider registered, `start` answers
 * `undefined` at the cost of a comparison: no span (not even the API's no-op
 * one), no context, no attribute, and the attempt runs as it would without
 * tracing. Whether one is registered is looked up once per claim, at the
 * first attempt of the runs it leased (they share its `claimedAt`): a busy
 * worker pays it once per batch, and a provider registered while a worker
 * runs traces the runs it claims afterwards.
 */
export class AttemptTracer {
  private readonly tracer = trace.getTracer(TRACER_NAME);
  private readonly names = new Map<string, string>();
  /** Whether a tracer provider was registered at the last look. */
  private registered = false;
  /** The claim time of the run at that look (NaN, never equal to itself: look at the first run). */
  private lookedAt = Number.NaN;

  constructor(private readonly links: boolean) {}

  /** Starts the span of `run`'s attempt; `undefined` when nothing records it. */
  start(run: LeasedRun, payload: RunPayload): AttemptSpan | undefined {
    if (run.claimedAt !== this.lookedAt) {
      this.lookedAt = run.claimedAt;
      this.registered = tracerRegistered();
    }
    if (!this.registered) return undefined;
    const producer = payload.headers ? propagation.extract(ROOT_CONTEXT, payload.headers) : ROOT_CONTEXT;
    const linked = this.links ? trace.getSpanContext(producer) : undefined;
    const parent = this.links ? ROOT_CONTEXT : producer;
    const span = this.tracer.startSpan(
      this.spanName(payload.task),
      linked ? { kind: SpanKind.CONSUMER, links: [{ context: linked }], root: true } : CONSUMER,
      parent,
    );
    // A provider may still not record it (its sampler said no): no attributes, no context.
    if (!span.isRecording()) return undefined;
    span.setAttributes({
      'messaging.system': 'threadmill',
      'messaging.operation.type': 'process',
      'messaging.destination.name': run.queue,
      'messaging.message.id': run.id,
      'threadmill.task': payload.task,
      'threadmill.attempt': run.attempts,
    });
    return { span, context: trace.setSpan(parent, span) };
  }

  /** `process <task>`, made once per task name. */
  private spanName(task: string): string {
    let name = this.names.get(task);
    if (name === undefined) {
      name = `process ${task}`;
      this.names.set(task, name);
    }
    return name;
  }

  /** Ends an attempt's span with its outcome: a failure records its error and sets the status to ERROR. */
  end({ span }: AttemptSpan, outcome: Outcome): void {
    span.setAttribute('threadmill.outcome', outcome.kind);
    const error = outcome.kind === 'successful' ? undefined : outcome.error;
    if (error) {
      span.recordException({ name: error.errorClass, message: error.message, stack: error.stack });
      span.setStatus({ code: SpanStatusCode.ERROR, message: `${error.errorClass}: ${error.message}` });
    } else if (outcome.kind === 'quarantine') {
      span.setStatus({ code: SpanStatusCode.ERROR, message: `quarantined (${outcome.reason}): ${outcome.message}` });
    }
    span.end();
  }
}
