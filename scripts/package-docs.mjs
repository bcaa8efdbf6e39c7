#!/usr/bin/env node
// Copies the repository's README.md, LICENSE and CHANGELOG.md into a package
// being packed: npm runs it as the package's `prepack` script, in the package's
// folder (`npm pack`, `npm publish`). The copies are ignored by git, so the
// files at the repository root stay the one source of truth.
//
// The README and the CHANGELOG link into docs/ with paths relative to the
// repository root, which resolve on GitHub and nowhere else: npm's page of the
// package, or a reader of node_modules, would meet broken links. The copies
// point them at the repository (`repository.url` of the package's
// package.json), at the tag of the version being packed (`v<version>`, which
// the release pushes: docs/development.md), so the docs linked from a version's
// page are those of that version. Images go to their raw files, other targets
// to GitHub's page of them. Fenced code blocks are copied as they are.
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const packageDir = process.argv[2] ?? process.cwd();
const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));

/** `https://github.com/<owner>/<name>` from the package's `repository`, or an error naming what to fix. */
function repositoryUrl() {
  const url = typeof manifest.repository === 'string' ? manifest.repository : manifest.repository?.url;
  const github = /^(?:git\+)?https:\/\/github\.com\/([^/]+\/[^/]+?)(?:\.git)?\/?$/.exec(url ?? '');
  if (!github) {
    throw new Error(
      `${manifest.name}: package.json needs a GitHub repository.url (git+https://github.com/<owner>/<name>.git) ` +
        `to turn the README's relative links into absolute ones; it has ${JSON.stringify(url)}.`,
    );
  }
  return `https://github.com/${github[1]}`;
}

const repository = repositoryUrl();
const ref = `v${manifest.version}`;
const rawBase = `${repository.replace('https://github.com/', 'https://raw.githubusercontent.com/')}/${ref}`;
const pageBase = `${repository}/blob/${ref}`;
const IMAGE = /\.(?:svg|png|jpe?g|gif|webp)$/i;

/** A link target as it reads from the npm page: absolute targets and in-page anchors are kept. */
function absolute(target) {
  if (/^(?:[a-z][a-z\d+.-]*:|#|\/\/)/i.test(target)) return target;
  const [path, anchor] = target.split(/(?=#)/);
  const file = posix.normalize(path).replace(/^\/+/, '');
  if (file.startsWith('../')) throw new Error(`${target}: a link out of the repository cannot be made absolute.`);
  return `${IMAGE.test(file) ? rawBase : pageBase}/${file}${anchor ?? ''}`;
}

/** The markdown's inline links and images, reference definitions and HTML `src`/`srcset`/`href` made absolute. */
function withAbsoluteLinks(markdown) {
  return markdown
    .split(/(^```[^\n]*\n[\s\S]*?^```$)/m)
    .map((part, index) =>
      index % 2 === 1
        ? part
        : part
            .replace(/\]\(([^)\s]+)/g, (_, target) => `](${absolute(target)}`)
            .replace(/^(\[[^\]]+\]:\s*)(\S+)/gm, (_, label, target) => `${label}${absolute(target)}`)
            .replace(/\b(src|srcset|href)="([^"\s]+)"/g, (_, name, target) => `${name}="${absolute(target)}"`),
    )
    .join('');
}

for (const name of ['README.md', 'CHANGELOG.md']) {
  writeFileSync(join(packageDir, name), withAbsoluteLinks(readFileSync(join(root, name), 'utf8')));
}
copyFileSync(join(root, 'LICENSE'), join(packageDir, 'LICENSE'));
