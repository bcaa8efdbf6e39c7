import { Injectable, Module } from '@nestjs/common';
import { context, propagation, ProxyTracer, ROOT_CONTEXT, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ExponentialBackoff, Task, TaskStatus } from '@threadmill/nestjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Harness } from '../support/harness.js';
import { readStoredPayload } from '../support/stored-payload.js';

/** Attempts of `flaky` keys so far, outside Threadmill: its first attempt of each key fails. */
const attempts = new Map<string, number>();

@Injectable()
class TracedService {
  /** Makes a span of its own, which must be a child of the attempt's. */
  @Task()
  async work(key: string): Promise<string> {
    await trace.getTracer('app').startActiveSpan(`inner ${key}`, async (span) => span.end());
    return key;
  }

  @Task({ retry: new ExponentialBackoff({ baseDelayMs: 10, maxRetries: 2 }) })
  async flaky(key: string): Promise<void> {
    const attempt = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, attempt);
    if (attempt === 1) throw new Error(`first attempt of ${key} fails`);
  }
}

@Module({ providers: [TracedService] })
class TracedModule {}

const exporter = new InMemorySpanExporter();
const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((span) => span.name === name);
const producerTracer = () => trace.getTracer('producer');

/** Runs `body` inside an active producer span; returns the span's context. */
async function underProducerSpan(name: string, body: () => Promise<unknown>) {
  return producerTracer().startActiveSpan(name, async (span) => {
    try {
      await body();
      return span.spanContext();
    } finally {
      span.end();
    }
  });
}

describe('OpenTelemetry', () => {
  describe('with no SDK registered', () => {
    let app: Harness;
    beforeAll(async () => {
      app = await Harness.start({ imports: [TracedModule], worker: { concurrency: 2 } });
    });
    afterAll(() => app.close());

    it('carries no trace context and runs as before', async () => {
      const run = await app.queue.enqueue(TracedService, 'work', ['plain']);
      expect(await app.waitFor(run.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 'plain' });
      expect(await readStoredPayload(app.backend, run.id)).toBe('["TracedService.work",["plain"]]');
    });
  });

  describe('with a propagator but no tracer provider, then a provider registered while the worker runs', () => {
    let app: Harness;
    beforeAll(async () => {
      // What an application may set up without tracing: context and propagation, no provider.
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      app = await Harness.start({ imports: [TracedModule], worker: { concurrency: 2 } });
    });
    afterAll(async () => {
      await app.close();
      trace.disable();
      propagation.disable();
      context.disable();
    });

    it('starts no span and stores no trace header, even under an active span context', async () => {
      // Every tracer the API hands out before a provider is registered is a ProxyTracer.
      const startSpan = vi.spyOn(ProxyTracer.prototype, 'startSpan');
      try {
        const incoming = trace.setSpanContext(ROOT_CONTEXT, {
          traceId: '0af7651916cd43dd8448eb211c80319c',
          spanId: 'b7ad6b7169203331',
          traceFlags: TraceFlags.SAMPLED,
        });
        const run = await context.with(incoming, () => app.queue.enqueue(TracedService, 'work', ['quiet']));
        expect(await readStoredPayload(app.backend, run.id)).toBe('["TracedService.work",["quiet"]]');
        expect(await app.waitFor(run.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 'quiet' });
        // The attempt started no span, not even the API's no-op one.
        expect(startSpan).not.toHaveBeenCalled();
      } finally {
        startSpan.mockRestore();
      }
    });

    it('traces the runs claimed after a provider is registered', async () => {
      trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
      let id = '';
      const producer = await underProducerSpan('late', async () => {
        id = (await app.queue.enqueue(TracedService, 'work', ['late'])).id;
      });
      const stored = JSON.parse((await readStoredPayload(app.backend, id))!) as unknown[];
      expect(stored[3]).toEqual({ traceparent: expect.stringContaining(producer.traceId) });
      await app.waitFor(id);
      const [attempt] = spans('process TracedService.work').filter((s) => s.attributes['messaging.message.id'] === id);
      expect(attempt!.parentSpanContext?.spanId).toBe(producer.spanId);
    });
  });

  describe('with an SDK registered by the application', () => {
    const contextManager = new AsyncLocalStorageContextManager();
    let child: Harness;
    let linked: Harness;
    beforeAll(async () => {
      context.setGlobalContextManager(contextManager.enable());
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
      child = await Harness.start({ imports: [TracedModule], worker: { concurrency: 2 } });
      linked = await Harness.start({
        options: { traceLinks: true },
        imports: [TracedModule],
        worker: { concurrency: 2 },
      });
    });
    afterAll(async () => {
      await child.close();
      await linked.close();
      trace.disable();
      propagation.disable();
      context.disable();
    });

    it("makes each attempt a span, a child of the producer's, with the task's own spans below it", async () => {
      let id = '';
      const producer = await underProducerSpan('checkout', async () => {
        id = (await child.queue.enqueue(TracedService, 'work', ['a'])).id;
      });
      // The envelope carries the producer's context, a fourth element.
      const stored = JSON.parse((await readStoredPayload(child.backend, id))!) as unknown[];
      expect(stored).toEqual([
        'TracedService.work',
        ['a'],
        0,
        { traceparent: expect.stringContaining(producer.traceId) },
      ]);
      expect(await child.waitFor(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 'a' });

      const [attempt] = spans('process TracedService.work').filter((s) => s.attributes['messaging.message.id'] === id);
      expect(attempt!.spanContext().traceId).toBe(producer.traceId);
      expect(attempt!.parentSpanContext?.spanId).toBe(producer.spanId);
      expect(attempt!.instrumentationScope.name).toBe('@threadmill/nestjs');
      expect(attempt!.attributes).toMatchObject({
        'messaging.system': 'threadmill',
        'messaging.destination.name': 'default',
        'messaging.operation.type': 'process',
        'threadmill.task': 'TracedService.work',
        'threadmill.attempt': 1,
        'threadmill.outcome': 'successful',
      });
      expect(attempt!.status.code).toBe(SpanStatusCode.UNSET);
      const [inner] = spans('inner a');
      expect(inner!.parentSpanContext?.spanId).toBe(attempt!.spanContext().spanId);
    });

    it('records a failed attempt as an error with its exception, and its retry as a span of its own', async () => {
      let id = '';
      const producer = await underProducerSpan('signup', async () => {
        [{ id }] = await child.queue.enqueueMany([{ task: 'TracedService.flaky', args: ['f'] }]);
      });
      expect(await child.waitFor(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 2 });
      const [first, second] = spans('process TracedService.flaky')
        .filter((s) => s.attributes['messaging.message.id'] === id)
        .sort((a, b) => Number(a.attributes['threadmill.attempt']) - Number(b.attributes['threadmill.attempt']));
      expect(first!.attributes).toMatchObject({ 'threadmill.attempt': 1, 'threadmill.outcome': 'retry' });
      expect(first!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'Error: first attempt of f fails' });
      expect(first!.events.map((e) => [e.name, e.attributes?.['exception.message']])).toEqual([
        ['exception', 'first attempt of f fails'],
      ]);
      expect(second!.attributes).toMatchObject({ 'threadmill.attempt': 2, 'threadmill.outcome': 'successful' });
      for (const span of [first!, second!]) expect(span.parentSpanContext?.spanId).toBe(producer.spanId);
    });

    it("with traceLinks, starts each attempt's trace linked to the producer's span", async () => {
      let id = '';
      const producer = await underProducerSpan('import', async () => {
        id = (await linked.queue.enqueue(TracedService, 'work', ['l'])).id;
      });
      await linked.waitFor(id);
      const [attempt] = spans('process TracedService.work').filter((s) => s.attributes['messaging.message.id'] === id);
      expect(attempt!.spanContext().traceId).not.toBe(producer.traceId);
      expect(attempt!.parentSpanContext).toBeUndefined();
      expect(attempt!.links.map((link) => link.context.spanId)).toEqual([producer.spanId]);
    });

    it('carries nothing for a run enqueued outside any span', async () => {
      const run = await child.queue.enqueue(TracedService, 'work', ['orphan']);
      expect(await readStoredPayload(child.backend, run.id)).toBe('["TracedService.work",["orphan"]]');
      await child.waitFor(run.id);
      const [attempt] = spans('process TracedService.work').filter(
        (s) => s.attributes['messaging.message.id'] === run.id,
      );
      expect(attempt!.parentSpanContext).toBeUndefined();
    });
  });
});
