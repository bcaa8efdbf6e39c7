import { dirname, join, posix } from 'node:path';
import ts from 'typescript';

/**
 * One fenced TypeScript block of a documentation page, as a file of the
 * page's small project.
 */
export interface Snippet {
  /** The page, relative to the repository root (`docs/tasks.md`). */
  readonly page: string;
  /** Line of the opening fence in the page, 1-based. */
  readonly fenceLine: number;
  /**
   * The file the block is: the path its first-line comment names
   * (`// email.service.ts: ...`), else `snippet-<fenceLine>.ts`.
   */
  readonly fileName: string;
  readonly code: string;
}

/** A compiler error in a snippet, located in its page. */
export interface SnippetProblem {
  readonly page: string;
  /** Line in the page, 1-based (the fence's line for an error without a position). */
  readonly line: number;
  readonly fenceLine: number;
  readonly fileName: string;
  /** `TS2345: Argument of type ...` */
  readonly message: string;
}

const FENCE = /^( *)(`{3,}|~{3,})\s*([^\s`]*)/;
const LANGUAGES = new Set(['ts', 'typescript']);
/** `// email.service.ts: ...` or `// apps/worker/src/main.ts` on a block's first line names its file. */
const FILE_COMMENT = /^\/\/\s*((?:[\w.-]+\/)*[\w.-]+\.ts)(?::|\s|$)/;

/**
 * The ```ts and ```typescript blocks of a Markdown page, each as a file.
 * Blocks inside list items (indented fences) are read without their indent.
 * @throws Error when two blocks of the page name the same file
 */
export function extractSnippets(page: string, markdown: string): Snippet[] {
  const lines = markdown.split(/\r?\n/);
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const fence = open[2]!;
    const language = open[3]!.toLowerCase();
    // A closing fence: the opening's character, at least as many, nothing after.
    const closing = new RegExp(`^ *\\${fence[0]}{${fence.length},}\\s*$`);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !closing.test(lines[j]!); j++) {
      const line = lines[j]!;
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart());
    }
    if (LANGUAGES.has(language)) {
      const named = FILE_COMMENT.exec(body[0] ?? '');
      const fileName = named ? posix.normalize(named[1]!) : `snippet-${i + 1}.ts`;
      if (fileName.startsWith('../')) {
        throw new Error(`${page}:${i + 1}: this block names ${fileName}, outside its page's project; drop the "../".`);
      }
      const twin = snippets.find((s) => s.fileName === fileName);
      if (twin) {
        throw new Error(
          `${page}:${i + 1}: this block names ${fileName}, as the block at line ${twin.fenceLine} does; ` +
            'give one of them another file name.',
        );
      }
      snippets.push({ page, fenceLine: i + 1, fileName, code: body.join('\n') });
    }
    i = j;
  }
  return snippets;
}

/**
 * Type-checks snippets against the library, in one program: each page is a
 * project of its own (a directory of virtual files under the repository
 * root, so `package.json`'s `"type": "module"` and `node_modules` apply),
 * compiled with the repository's `tsconfig.json` (its options and its paths
 * to `libs/threadmill/src`). Every snippet is made a module, so pages and
 * blocks without imports do not share a global scope.
 * @param root the repository root
 * @returns every error in a snippet, in page order
 */
export function checkSnippets(root: string, snippets: readonly Snippet[]): SnippetProblem[] {
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  });
  if (!config) throw new Error(`cannot read ${join(root, 'tsconfig.json')}`);
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, incremental: false };

  const files = new Map<string, Snippet>();
  const directories = new Set<string>();
  for (const snippet of snippets) {
    const path = join(root, '.doc-snippets', snippet.page.replace(/\.md$/, '').replaceAll('/', '__'), snippet.fileName);
    files.set(path, snippet);
    for (let dir = dirname(path); dir.length > root.length; dir = dirname(dir)) directories.add(dir);
  }
  const source = (path: string) => `${files.get(path)!.code}\nexport {};\n`;

  const host = ts.createCompilerHost(options, true);
  const { getSourceFile, fileExists, readFile, directoryExists } = host;
  host.getSourceFile = (path, language, onError, create) =>
    files.has(path)
      ? ts.createSourceFile(path, source(path), language, true)
      : getSourceFile(path, language, onError, create);
  host.fileExists = (path) => files.has(path) || fileExists(path);
  host.readFile = (path) => (files.has(path) ? source(path) : readFile(path));
  host.directoryExists = (path) => directories.has(path) || (directoryExists?.(path) ?? ts.sys.directoryExists(path));
  host.realpath = (path) => (files.has(path) || directories.has(path) ? path : (ts.sys.realpath?.(path) ?? path));

  const program = ts.createProgram({ rootNames: [...files.keys()], options, host });
  const problems: SnippetProblem[] = [];
  for (const diagnostic of [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]) {
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    throw new Error(`The snippets' compiler options are wrong: TS${diagnostic.code}: ${text}`);
  }
  for (const [path, snippet] of files) {
    const file = program.getSourceFile(path)!;
    for (const diagnostic of [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]) {
      const line = diagnostic.start === undefined ? 0 : file.getLineAndCharacterOfPosition(diagnostic.start).line + 1;
      problems.push({
        page: snippet.page,
        line: snippet.fenceLine + line,
        fenceLine: snippet.fenceLine,
        fileName: snippet.fileName,
        message: `TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`,
      });
    }
  }
  return problems.sort((a, b) => a.page.localeCompare(b.page) || a.line - b.line);
}

/** `docs/tasks.md:57 (the ts block opened at line 50, compiled as producer.ts): TS2345: ...` */
export function formatProblem({ page, line, fenceLine, fileName, message }: SnippetProblem): string {
  return `${page}:${line} (the ts block opened at line ${fenceLine}, compiled as ${fileName}): ${message}`;
}
