import { Injectable } from '@nestjs/common';
import { Task } from '@threadmill/nestjs';

/** Pages the on-call engineer: high priority, runs ahead of everything else on its queue. */
@Injectable()
export class AlertService {
  @Task({ priority: 50 })
  page(incidentId: number, severity: 'critical' | 'major'): { paged: boolean; incidentId: number } {
    return { paged: severity === 'critical', incidentId };
  }
}
