import { Injectable } from '@nestjs/common';
import { Task } from '@threadmill/nestjs';
import { PageOnCall } from './contracts.js';

/** Pages the on-call engineer: high priority, runs ahead of everything else on its queue. */
@Injectable()
export class AlertService {
  @Task(PageOnCall)
  page(incidentId: number, severity: 'critical' | 'major'): { paged: boolean; incidentId: number } {
    return { paged: severity === 'critical', incidentId };
  }
}
