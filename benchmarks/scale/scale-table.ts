import type { ScaleCase, ScaleRow } from './scale-case.js';

const HEAD = [
  'size',
  'operation',
  'ops/s',
  'Redis CPU (µs/op)',
  'p50 (ms)',
  'p99 (ms)',
  'Redis bytes/item',
  'RSS (MB)',
];

function figure(value: number | undefined, digits: number): string {
  if (value === undefined || !Number.isFinite(value)) return '-';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A case's rows as a Markdown table, its heading naming what the size counts. */
export function scaleTable(scaleCase: ScaleCase, rows: readonly ScaleRow[]): string {
  const lines = [
    `### ${scaleCase.name} (size: ${scaleCase.unit})`,
    '',
    `| ${HEAD.join(' | ')} |`,
    `| ---: | :--- | ${HEAD.slice(2)
      .map(() => '---:')
      .join(' | ')} |`,
  ];
  for (const r of rows) {
    const cells = [
      figure(r.size, 0),
      r.operation,
      figure(r.opsPerS, 0),
      figure(r.redisUsPerOp, 1),
      figure(r.p50Ms, 2),
      figure(r.p99Ms, 2),
      figure(r.redisBytesPerItem, 0),
      figure(r.rssMb, 0),
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}
