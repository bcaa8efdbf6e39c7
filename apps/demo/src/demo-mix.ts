import { ChargeInvoice, GenerateReport, PageOnCall, SendWelcome } from '@threadmill/demo-tasks';
import type { EnqueueByContract, EnqueueManyItem, EnqueueOptions, TaskContract } from '@threadmill/nestjs';

/** The kinds of run the demo enqueues, with their share of the mix. */
export const DEMO_MIX = [
  { kind: 'email', share: 0.45, label: 'quick emails' },
  { kind: 'charge', share: 0.25, label: 'charges (a third fail once and retry, 1 in 20 declined)' },
  { kind: 'report', share: 0.15, label: 'reports' },
  { kind: 'deferred-report', share: 0.1, label: 'reports deferred by 1-3 s' },
  { kind: 'alert', share: 0.05, label: 'high-priority alerts' },
] as const;

export type DemoKind = (typeof DEMO_MIX)[number]['kind'];

function kindOf(i: number): DemoKind {
  // Spread the kinds evenly through the batch rather than in blocks.
  const x = (((i * 0.6180339887) % 1) + 1) % 1;
  let acc = 0;
  for (const entry of DEMO_MIX) {
    acc += entry.share;
    if (x < acc) return entry.kind;
  }
  return 'email';
}

/** An `enqueueMany` item of `contract`, its arguments checked against the contract's by the compiler. */
function byContract<A extends readonly unknown[], R>(
  contract: TaskContract<A, R>,
  args: A,
  options: EnqueueOptions = {},
): EnqueueByContract<A, R> {
  return { ...options, task: contract, args };
}

/** Item `i` of a demo batch, deterministic so runs are comparable. */
export function demoItem(i: number): { kind: DemoKind; item: EnqueueManyItem } {
  const kind = kindOf(i);
  switch (kind) {
    case 'email':
      return { kind, item: byContract(SendWelcome, [i, `user${i}@example.com`]) };
    case 'charge':
      return { kind, item: byContract(ChargeInvoice, [i, 500 + (i % 100) * 10]) };
    case 'report':
      return { kind, item: byContract(GenerateReport, [`r-${i}`, 50]) };
    case 'deferred-report':
      return { kind, item: byContract(GenerateReport, [`r-${i}`, 50], { delayMs: 1_000 + (i % 2_000) }) };
    case 'alert':
      return { kind, item: byContract(PageOnCall, [i, i % 2 ? 'critical' : 'major']) };
  }
}
