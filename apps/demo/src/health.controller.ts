import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { ThreadmillHealthIndicator } from '@threadmill/nestjs/health';

/**
 * Health checks as a deployment would wire them: `/health` for liveness
 * (Redis answers), `/health/queues` for alerting (workers consume every
 * queue, and no ready run has waited 30 s).
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly threadmill: ThreadmillHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  live() {
    return this.health.check([() => this.threadmill.isRedisReachable('redis')]);
  }

  @Get('queues')
  @HealthCheck()
  queues() {
    return this.health.check([
      () => this.threadmill.areWorkersAlive('workers'),
      () => this.threadmill.isQueueAgeUnder('queues', 30_000),
    ]);
  }
}
