import { HttpException, HttpStatus, Injectable, PayloadTooLargeException, type NestMiddleware } from '@nestjs/common';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

/** The largest request body the dashboard takes: its actions send `{}` or `{ "confirm": "<queue>" }`. */
export const MAX_BODY_BYTES = 4096;

/**
 * Sent with every answer of the dashboard, page and API, refusals and errors
 * included: nothing is cached, nothing is read as another type than it is
 * sent as, no other site may embed an answer or frame the page, and no
 * address leaks to the sites the page links to.
 */
const HEADERS: Readonly<Record<string, string>> = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

/**
 * Runs before the guards and handlers of every dashboard route: sets the
 * headers above, drops `X-Powered-By` and refuses a request body over
 * {@link MAX_BODY_BYTES}.
 *
 * It works within the dashboard's routes and leaves the application's
 * settings alone. So `X-Powered-By` (an Express setting of the whole app) is
 * removed from the dashboard's answers only, and the application's body
 * parser, which runs first, has already read a body of up to its own limit
 * (100 kB by default) when the size is checked: a larger body is refused by
 * its declared length before any handler sees it.
 */
@Injectable()
export class DashboardRequestMiddleware implements NestMiddleware {
  use(request: IncomingMessage, response: ServerResponse, next: () => void): void {
    for (const [name, value] of Object.entries(HEADERS)) response.setHeader(name, value);
    response.removeHeader('X-Powered-By');
    checkBodySize(request.headers);
    next();
  }
}

function checkBodySize(headers: IncomingHttpHeaders): void {
  const length = headers['content-length'];
  if (length === undefined) {
    // A streamed (chunked) body has no size to check before it is read.
    if (headers['transfer-encoding'] === undefined) return;
    throw new HttpException(
      'The Threadmill dashboard takes a request body only with its Content-Length, as browsers send it.',
      HttpStatus.LENGTH_REQUIRED,
    );
  }
  if (Number(length) > MAX_BODY_BYTES) {
    throw new PayloadTooLargeException(
      `The Threadmill dashboard takes request bodies of at most ${MAX_BODY_BYTES} bytes ` +
        `(its largest is { "confirm": "<queue>" }); this one has ${Number(length)}.`,
    );
  }
}
