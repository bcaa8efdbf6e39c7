/**
 * The environment of a child process: without the npm_* variables of an
 * `npm test` around this one, which would steer an npm it runs (its prefix,
 * its workspace, its lifecycle event).
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key)) env[key] = value;
  return { ...env, ...extra };
}
