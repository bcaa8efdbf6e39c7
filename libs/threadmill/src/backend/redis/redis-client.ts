import type { Cluster, Redis } from 'ioredis';

/** A standalone connection or a Redis Cluster client. */
export type RedisClient = Redis | Cluster;
