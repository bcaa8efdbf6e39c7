/**
 * The environment of a child process: without the npm_* variables of an
 * `npm test` around this one, which would steer an npm it runs (its prefix,
 * its workspace, its lifecycle event), nor the VITEST* ones of the Vitest
 * running the test, which an app's own Vitest would take for its own; and
 * without colours, so that its output can be matched.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(npm_|VITEST|FORCE_COLOR$)/i.test(key)) env[key] = value;
  }
  return { ...env, NO_COLOR: '1', ...extra };
}
