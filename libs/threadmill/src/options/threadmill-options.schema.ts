import {
  ArrayNotEmpty,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsInt,
  IsNumber,
  IsOptional,
  Matches,
  Max,
  Min,
  ValidateBy,
  type ValidationOptions,
} from 'class-validator';
import { MAX_PARTITIONS } from '../codec/run-id.js';
import { rateLimitProblem, type RateLimit } from '../limits/rate-limit.js';
import { DEFAULT_RESULT_TTL_MS, resultTtlProblem, type ResultTtl } from '../records/result-ttl.js';
import { enqueueConfirmationProblem, type EnqueueConfirmation } from '../records/enqueue-confirmation.js';
import type { RedisConnection } from './threadmill-options.interface.js';

/** Queue names and aliases become parts of Redis keys: keep them to a safe alphabet. */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
const NAME_RULE = 'must be 1-64 characters of letters, digits, "_", "." or "-"';

const REDIS_SCHEME = /^(redis|rediss|unix):\/\//;

function IsRedisConnection(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isRedisConnection',
      validator: {
        // A URL is parsed here, not first by ioredis: the parser's error carries the whole URL, password
        // included, into whatever prints it (its `input`), where this one is masked.
        validate: (value: unknown) =>
          typeof value === 'string'
            ? REDIS_SCHEME.test(value) && URL.canParse(value)
            : typeof value === 'object' && value !== null && !Array.isArray(value),
        defaultMessage: (args) =>
          typeof args?.value === 'string' && REDIS_SCHEME.test(args.value)
            ? 'connection is not a valid URL; percent-encode "@", "/", ":", "#" and "%" in its user and password'
            : 'connection must be a redis://, rediss:// or unix:// URL, ioredis options, or an ioredis instance',
      },
    },
    options,
  );
}

/** `resultTtlMs`: a number of ms, or one per outcome (`{ successful?, failed? }`). */
function IsResultTtl(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isResultTtl',
      validator: {
        validate: (value: unknown) => resultTtlProblem(value) === undefined,
        defaultMessage: (args) => resultTtlProblem(args?.value) ?? 'resultTtlMs is invalid',
      },
    },
    options,
  );
}

/** `confirmEnqueues`: false, or `{ replicas, timeoutMs? }`. */
function IsEnqueueConfirmation(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isEnqueueConfirmation',
      validator: {
        validate: (value: unknown) => enqueueConfirmationProblem(value) === undefined,
        defaultMessage: (args) => enqueueConfirmationProblem(args?.value) ?? 'confirmEnqueues is invalid',
      },
    },
    options,
  );
}

/** `rateLimits`: queue name → `{ max, perMs, startSlackMs? }`. */
function rateLimitsProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'rateLimits must be an object of queue name → { max, perMs }';
  }
  for (const [queue, limit] of Object.entries(value)) {
    if (!NAME_PATTERN.test(queue)) return `rateLimits: the queue name "${queue}" ${NAME_RULE}`;
    const problem = rateLimitProblem(queue, limit);
    if (problem !== undefined) return `rateLimits: ${problem}`;
  }
  return undefined;
}

function IsRateLimits(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isRateLimits',
      validator: {
        validate: (value: unknown) => rateLimitsProblem(value) === undefined,
        defaultMessage: (args) => rateLimitsProblem(args?.value) ?? 'rateLimits is invalid',
      },
    },
    options,
  );
}

/** `concurrencyCaps`: queue name → the most runs of it leased at once. */
function concurrencyCapsProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'concurrencyCaps must be an object of queue name → cap (a positive integer), e.g. { payments: 5 }';
  }
  for (const [queue, cap] of Object.entries(value)) {
    if (!NAME_PATTERN.test(queue)) return `concurrencyCaps: the queue name "${queue}" ${NAME_RULE}`;
    if (!Number.isSafeInteger(cap) || (cap as number) < 1) {
      return (
        `concurrencyCaps: the cap of queue "${queue}" must be a positive integer, got ${String(cap)}; ` +
        'leave the queue out for no cap'
      );
    }
  }
  return undefined;
}

function IsConcurrencyCaps(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isConcurrencyCaps',
      validator: {
        validate: (value: unknown) => concurrencyCapsProblem(value) === undefined,
        defaultMessage: (args) => concurrencyCapsProblem(args?.value) ?? 'concurrencyCaps is invalid',
      },
    },
    options,
  );
}

/**
 * The validation rules of {@link ThreadmillModuleOptions}, with the defaults
 * as initial values. Validated with `whitelist` and `forbidNonWhitelisted`, so
 * a misspelt option name fails the boot too.
 */
export class ThreadmillOptionsSchema {
  @Matches(NAME_PATTERN, { message: `name ${NAME_RULE}` })
  name = 'default';

  @IsRedisConnection()
  connection: RedisConnection = 'redis://localhost:6379';

  @Matches(NAME_PATTERN, { message: `alias ${NAME_RULE}` })
  alias = 'default';

  @IsInt()
  @Min(1)
  @Max(MAX_PARTITIONS)
  partitions = 1;

  @IsArray()
  @ArrayNotEmpty()
  @ArrayUnique()
  @Matches(NAME_PATTERN, { each: true, message: `each queue name ${NAME_RULE}` })
  queues: string[] = ['default'];

  @IsInt()
  @Min(100)
  @Max(24 * 3600 * 1000)
  leaseTtlMs = 30_000;

  @IsResultTtl()
  resultTtlMs: ResultTtl = DEFAULT_RESULT_TTL_MS;

  @IsRateLimits()
  rateLimits: Record<string, RateLimit> = {};

  @IsConcurrencyCaps()
  concurrencyCaps: Record<string, number> = {};

  @IsInt()
  @Min(10)
  @Max(60_000)
  brokerIntervalMs = 1_000;

  @IsInt()
  @Min(1)
  @Max(10_000)
  batchSize = 300;

  @IsInt()
  @Min(1)
  connectTimeoutMs = 10_000;

  @IsEnqueueConfirmation()
  confirmEnqueues: EnqueueConfirmation | false = false;

  @IsInt()
  @Min(64)
  @Max(512 * 1024 * 1024)
  maxPayloadBytes = 1024 * 1024;

  @IsInt()
  @Min(1)
  @Max(1000)
  maxRecoveries = 3;

  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0.01)
  @Max(1)
  memoryWarningRatio = 0.8;

  @IsInt()
  @Min(100)
  @Max(3_600_000)
  memoryCheckIntervalMs = 5_000;

  @IsBoolean()
  traceLinks = false;

  @IsBoolean()
  allowEviction = false;

  @IsOptional()
  isGlobal?: boolean;
}
