import { Module } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { ThreadmillHealthIndicator } from './threadmill-health.indicator.js';

/**
 * Provides {@link ThreadmillHealthIndicator} for `@nestjs/terminus` health
 * checks. Needs `@nestjs/terminus` installed and `ThreadmillModule` imported;
 * it brings its own `HealthIndicatorService`, so `TerminusModule.forRoot()`
 * is only needed for `HealthCheckService`.
 */
@Module({
  providers: [HealthIndicatorService, ThreadmillHealthIndicator],
  exports: [ThreadmillHealthIndicator],
})
export class ThreadmillHealthModule {}
