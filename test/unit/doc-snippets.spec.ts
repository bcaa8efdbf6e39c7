import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkSnippets,
  extractSnippets,
  formatProblem,
  type Snippet,
  type SnippetProblem,
} from '../support/doc-snippets.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = [
  'README.md',
  ...readdirSync(new URL('../../docs', import.meta.url))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

/**
 * A page of the checker's own, compiled with the real ones: a named file
 * another block imports, and a call the API does not accept (an option
 * `forRoot` does not have), on line 15 of the page.
 */
const DRIFT_PAGE = 'test/drift.md';
const DRIFT = [
  '# Drift',
  '',
  '```ts',
  '// mail.module.ts: a module another block imports.',
  "import { Module } from '@nestjs/common';",
  '',
  '@Module({})',
  'export class MailModule {}',
  '```',
  '',
  '```typescript',
  "import { ThreadmillModule } from '@threadmill/nestjs';",
  "import { MailModule } from './mail.module.js';",
  '',
  'export const imports = [ThreadmillModule.forRoot({ leaseTTL: 5 }), MailModule];',
  '```',
  '',
].join('\n');

describe('the TypeScript snippets of README.md and docs/*.md', () => {
  let snippets: Snippet[];
  let problems: SnippetProblem[];

  beforeAll(() => {
    snippets = [
      ...PAGES.flatMap((page) =>
        extractSnippets(page, readFileSync(new URL(`../../${page}`, import.meta.url), 'utf8')),
      ),
      ...extractSnippets(DRIFT_PAGE, DRIFT),
    ];
    problems = checkSnippets(ROOT, snippets);
  }, 180_000);

  it('are found on the README and the pages that have them', () => {
    expect(snippets.filter((s) => s.page === 'README.md').length).toBeGreaterThan(0);
    expect(snippets.filter((s) => s.page.startsWith('docs/')).length).toBeGreaterThan(0);
  });

  it.each(PAGES)('of %s compile against the library', (page) => {
    expect(problems.filter((p) => p.page === page).map(formatProblem)).toEqual([]);
  });

  it('fail on a call the API does not accept, naming the page, the line and the error', () => {
    const drift = problems.filter((p) => p.page === DRIFT_PAGE);
    expect(drift.map(formatProblem)).toEqual([
      expect.stringMatching(
        /^test\/drift\.md:15 \(the ts block opened at line 11, compiled as snippet-11\.ts\): TS2561: .*'leaseTTL'/,
      ),
    ]);
  });

  it('name a block by the file its first-line comment names, and refuse two blocks of one name', () => {
    expect(extractSnippets('a.md', DRIFT).map((s) => s.fileName)).toEqual(['mail.module.ts', 'snippet-11.ts']);
    const twice = '```ts\n// a.ts: one\n```\n\n```ts\n// a.ts: two\n```\n';
    expect(() => extractSnippets('twice.md', twice)).toThrow('twice.md:5: this block names a.ts');
  });

  it('read a block inside a list item without its indent, up to its own closing fence', () => {
    const nested = '- An item:\n\n  ````ts\n  const fence = "```";\n  ```\n  export { fence };\n  ````\n';
    expect(extractSnippets('nested.md', nested)).toEqual([
      {
        page: 'nested.md',
        fenceLine: 3,
        fileName: 'snippet-3.ts',
        code: 'const fence = "```";\n```\nexport { fence };',
      },
    ]);
  });
});
