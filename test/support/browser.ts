import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

// The Chromium that browser tests drive, from the first of: CHROMIUM_PATH, a
// Chromium or Chrome on PATH, the one inside the @sparticuz/chromium npm
// package. The last needs nothing from the system but glibc, libexpat,
// libgcc, NSS and NSPR (and the system's fonts to draw text in a screenshot),
// so `npm ci && npm test` runs the browser tests on a machine that has Node
// and redis-server.

/** Names a Chromium or Chrome goes by on PATH, the first found winning. */
const ON_PATH = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

/**
 * The flags of every launch, whichever binary. For this machine's closed
 * network: without the background-networking ones Chromium keeps opening
 * connections that are refused, and looks up Google's hosts at every start.
 * Playwright adds `--headless` and gives each launch a fresh, temporary
 * user-data-dir, removed when the browser closes.
 */
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where the Chromium a test launches comes from. */
export type ChromiumSource = 'CHROMIUM_PATH' | 'PATH' | '@sparticuz/chromium';

/** The Chromium binary a test launches and the flags it runs with. */
export interface ChromiumChoice {
  source: ChromiumSource;
  executablePath: string;
  args: string[];
  /** Variables its process needs besides the test's own (where its libraries are). */
  env: Record<string, string>;
}

/** A launched Chromium and a line that says which one it is, for the test's output. */
export interface LaunchedChromium {
  browser: Browser;
  chromium: ChromiumChoice;
  description: string;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first of `names` found as an executable file in the directories of `path` (a PATH value). */
export function findOnPath(names: readonly string[], path = process.env['PATH'] ?? ''): string | undefined {
  const directories = path.split(delimiter).filter(Boolean);
  for (const name of names) {
    for (const directory of directories) {
      const candidate = join(directory, name);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  return undefined;
}

/** The root folder of an installed npm package, found as Node resolves it from this file. */
function packageRoot(name: string): string {
  const entry = createRequire(import.meta.url).resolve(name);
  for (let folder = dirname(entry); folder !== dirname(folder); folder = dirname(folder)) {
    if (existsSync(join(folder, 'package.json')) && readPackage(folder).name === name) return folder;
  }
  throw new Error(`no package.json named ${name} above ${entry}`);
}

function readPackage(folder: string): { name?: string; version?: string } {
  return JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
}

/**
 * The path of the Chromium inside @sparticuz/chromium, extracted once per
 * version into a folder of its own under the temporary directory. The
 * package's own cache, `/tmp/chromium`, is reused whatever version wrote it
 * and is written in place, so a run killed mid-extraction or two runs at once
 * would leave a broken binary for every later run; here each run extracts into
 * a fresh folder and renames it into place whole, and the first rename wins.
 */
async function bundledChromium(): Promise<string> {
  const { default: bundle } = await import('@sparticuz/chromium');
  const version = readPackage(packageRoot('@sparticuz/chromium')).version ?? 'unknown';
  const home = join(tmpdir(), `threadmill-chromium-${version}`);
  const executablePath = join(home, 'chromium');
  if (isExecutableFile(executablePath)) return executablePath;
  const staging = await mkdtemp(`${home}-`);
  try {
    // The package extracts into os.tmpdir(), which it reads before its first
    // await: pointing TMPDIR at the staging folder for that call alone is
    // enough. It extracts the libraries it carries (NSS, NSPR, expat) only
    // when it believes it runs on Amazon Linux 2023, its build's home, where
    // it reads that from AWS_EXECUTION_ENV at the same moment; they are what
    // it needs on any other glibc system too, so that is set for the call.
    const previous = { TMPDIR: process.env['TMPDIR'], AWS_EXECUTION_ENV: process.env['AWS_EXECUTION_ENV'] };
    process.env['TMPDIR'] = staging;
    process.env['AWS_EXECUTION_ENV'] = 'AWS_Lambda_nodejs20.x';
    let extracting: Promise<string>;
    try {
      extracting = bundle.executablePath();
    } finally {
      for (const [name, value] of Object.entries(previous)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    const extracted = await extracting;
    if (extracted !== join(staging, 'chromium')) {
      throw new Error(
        `@sparticuz/chromium ${version} extracted its Chromium to ${extracted}, not into ${staging}: ` +
          'test/support/browser.ts relies on it extracting into os.tmpdir(); update bundledChromium() for this version.',
      );
    }
    await rename(staging, home);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    // A folder renamed onto one that is not empty fails: another run extracted first.
    if (!isExecutableFile(executablePath)) throw error;
  }
  return executablePath;
}

/**
 * The Chromium to launch: `CHROMIUM_PATH` if set; else a `chromium`,
 * `chromium-browser`, `google-chrome-stable` or `google-chrome` found on PATH;
 * else the one inside @sparticuz/chromium.
 *
 * Every binary runs with the same {@link FLAGS}, so a test behaves alike
 * whichever it gets. The package's own `args` are for AWS Lambda and are left
 * out: with `--single-process` the browser exits when a test closes its last
 * page, `--disable-web-security` would let a page pass that a browser blocks,
 * and its `--disable-features` replaces Playwright's list (the last one given
 * wins). The build runs headless without them.
 */
export async function chooseChromium(env: NodeJS.ProcessEnv = process.env): Promise<ChromiumChoice> {
  const configured = env['CHROMIUM_PATH'];
  if (configured) {
    if (!isExecutableFile(configured)) {
      throw new Error(
        `CHROMIUM_PATH is ${configured}, which is not an executable file: point it at a Chromium or Chrome ` +
          'binary, or unset it to use a Chromium on PATH or the one inside @sparticuz/chromium.',
      );
    }
    return { source: 'CHROMIUM_PATH', executablePath: configured, args: FLAGS, env: {} };
  }
  const found = findOnPath(ON_PATH, env['PATH']);
  if (found) return { source: 'PATH', executablePath: found, args: FLAGS, env: {} };
  const executablePath = await bundledChromium();
  const home = dirname(executablePath);
  const libraries = [join(home, 'al2023', 'lib'), env['LD_LIBRARY_PATH']].filter(Boolean).join(delimiter);
  return {
    source: '@sparticuz/chromium',
    executablePath,
    args: FLAGS,
    env: { LD_LIBRARY_PATH: libraries, FONTCONFIG_PATH: env['FONTCONFIG_PATH'] ?? fontConfigPath(home) },
  };
}

/**
 * Where the bundled Chromium finds fonts: the system's fontconfig when it
 * has one (the package's own configuration lists only AWS Lambda's folders,
 * empty here, so a screenshot would show no text), else the package's.
 */
function fontConfigPath(home: string): string {
  return existsSync('/etc/fonts/fonts.conf') ? '/etc/fonts' : join(home, 'fonts');
}

/** Launches headless the Chromium that {@link chooseChromium} picks. */
export async function launchChromium(env: NodeJS.ProcessEnv = process.env): Promise<LaunchedChromium> {
  const choice = await chooseChromium(env);
  const from = {
    CHROMIUM_PATH: 'from CHROMIUM_PATH',
    PATH: 'found on PATH',
    '@sparticuz/chromium': 'inside the @sparticuz/chromium package',
  }[choice.source];
  let browser: Browser;
  try {
    browser = await chromium.launch({
      executablePath: choice.executablePath,
      args: choice.args,
      headless: true,
      env: { ...env, ...choice.env },
    });
  } catch (error) {
    const library = /error while loading shared libraries: ([^:\s]+)/.exec(String(error))?.[1];
    if (!library) throw error;
    const fix =
      choice.source === '@sparticuz/chromium'
        ? "It needs only glibc and libgcc from the system (Debian's libc6 and libgcc-s1), and brings the rest: " +
          'install the missing one, or set CHROMIUM_PATH to another Chromium.'
        : 'Install the package that has it, or set CHROMIUM_PATH to another Chromium.';
    throw new Error(
      `The Chromium at ${choice.executablePath} (${from}) cannot start: the system has no ${library}. ${fix}`,
      { cause: error },
    );
  }
  return {
    browser,
    chromium: choice,
    description: `Chromium ${browser.version()} at ${choice.executablePath} (${from})`,
  };
}
