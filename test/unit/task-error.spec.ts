import { BadRequestException, ForbiddenException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { toTaskError } from '../../libs/threadmill/src/worker/task-error.js';

/** What ValidationPipe throws for `reasons`. */
const refused = (reasons: string[]) =>
  new BadRequestException({ message: reasons, error: 'Bad Request', statusCode: 400 });

describe("the stored record of an attempt's error", () => {
  it("keeps the reasons a Nest exception's response lists, one each, and joined in its message", () => {
    const error = toTaskError(refused(['userId must not be less than 1', 'email must be an email']), 1);
    expect(error).toMatchObject({
      errorClass: 'BadRequestException',
      message: 'Bad Request Exception: userId must not be less than 1; email must be an email',
      reasons: ['userId must not be less than 1', 'email must be an email'],
      attempt: 1,
    });
  });

  it('keeps whole reasons within the budget of the message, and cuts a first one past it', () => {
    const many = Array.from({ length: 100 }, (_, i) => `field${i} ${'x'.repeat(90)}`);
    const { reasons } = toTaskError(refused(many), 1);
    expect(reasons!.length).toBeLessThan(many.length);
    expect(reasons).toEqual(many.slice(0, reasons!.length));
    expect(reasons!.join('').length).toBeLessThanOrEqual(2_048);
    expect(toTaskError(refused(['y'.repeat(5_000)]), 1).reasons).toEqual([`${'y'.repeat(2_048)}…`]);
  });

  it('has no reasons for an error whose response lists none', () => {
    expect(toTaskError(new ForbiddenException(), 1)).not.toHaveProperty('reasons');
    expect(toTaskError(new BadRequestException('year is missing'), 1)).not.toHaveProperty('reasons');
    expect(toTaskError(new TypeError('boom'), 2)).not.toHaveProperty('reasons');
  });
});
