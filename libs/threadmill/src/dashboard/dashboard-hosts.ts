import { isIP } from 'node:net';

/**
 * The host names the dashboard answers to (`allowedHosts`): names, or
 * `*.name` for every subdomain of a name; `'any'` answers every host.
 */
export type AllowedHosts = readonly string[] | 'any';

/** A host name as `allowedHosts` lists it: `queues.example.com`, `*.example.com`, `intranet`. */
export const HOST_PATTERN = /^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/i;

/** A name in the form the comparison uses: lower case, without the root's trailing dot. */
const canonical = (name: string) => name.toLowerCase().replace(/\.$/, '');

/**
 * The name of a `Host` header without its port: `[::1]:3000` is `::1`,
 * `Queues.Example.com.:443` is `queues.example.com`.
 */
export function hostName(header: string): string {
  const value = header.trim();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end < 0 ? value : value.slice(1, end);
  }
  if (isIP(value) === 6) return value;
  const colon = value.lastIndexOf(':');
  return canonical(colon < 0 ? value : value.slice(0, colon));
}

/**
 * Whether the dashboard answers a request with this `Host` header.
 *
 * DNS rebinding, the attack this stops, needs a name: a page on the
 * attacker's domain whose address is switched to this server, so that the
 * browser sends the attacker's name as the Host and counts the dashboard as
 * the page's own origin. An IP address, or `localhost` (which browsers
 * resolve themselves), cannot be that name, so they always pass; other
 * names pass only when listed. A request without a Host header comes from no
 * browser, and passes too.
 */
export function isAllowedHost(header: string | undefined, allowed: AllowedHosts): boolean {
  if (allowed === 'any' || header === undefined) return true;
  const name = hostName(header);
  if (isIP(name) !== 0 || name === 'localhost') return true;
  return allowed.some((entry) => {
    const pattern = canonical(entry);
    return pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) : name === pattern;
  });
}
