/**
 * The credentials of a URL: what follows `scheme://` up to the last `@` of the
 * same word. Greedy and blind to `/`, so a password with a raw `@` or `/` in
 * it (which a URL parser would misread) is masked whole.
 */
const USERINFO = /([a-z][a-z0-9+.-]*:\/\/)([^\s'"`<>]*)@/gi;

/** Credentials passed as query parameters (ioredis reads `?password=` as an option). */
const QUERY_CREDENTIALS = /([?&](?:password|username|user)=)[^&#\s'"`<>]*/gi;

const MASK = '***';

/**
 * `text` with the user and password of every URL in it masked: a connection
 * URL alone (`redis://:***@cache:6379`, `redis://***:***@cache:6379`) or a
 * message or command line that quotes one. Threadmill passes every URL it
 * prints through it: configuration errors, the inspector's usage errors and
 * its process title.
 */
export function maskUrl(text: string): string {
  return text
    .replace(USERINFO, (_, scheme: string, userinfo: string) => {
      const colon = userinfo.indexOf(':');
      if (userinfo.length === 0) return `${scheme}@`;
      if (colon < 0) return `${scheme}${MASK}@`;
      return `${scheme}${colon === 0 ? '' : MASK}:${MASK}@`;
    })
    .replace(QUERY_CREDENTIALS, `$1${MASK}`);
}
