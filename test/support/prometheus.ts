/** One sample of a Prometheus text exposition. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/** Parses the Prometheus text format (what a `/metrics` endpoint serves) into samples. */
export function parseMetrics(text: string): Sample[] {
  return text.split('\n').flatMap((line) => {
    const match = LINE.exec(line);
    if (!match || line.startsWith('#')) return [];
    const labels = Object.fromEntries([...(match[2] ?? '').matchAll(LABEL)].map(([, key, value]) => [key!, value!]));
    return [{ name: match[1]!, labels, value: Number(match[3]) }];
  });
}

/**
 * The value of the sample `name` whose labels include `labels`, summed over
 * the matching samples; undefined when none matches.
 */
export function valueOf(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const matching = samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  return matching.length === 0 ? undefined : matching.reduce((total, sample) => total + sample.value, 0);
}

/** Scrapes `url` and parses what it serves; fails on a non-200 answer. */
export async function scrape(url: string): Promise<Sample[]> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${await response.text()}`);
  return parseMetrics(await response.text());
}
