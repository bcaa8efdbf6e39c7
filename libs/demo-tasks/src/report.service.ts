import { Injectable } from '@nestjs/common';
import { Task } from '@threadmill/nestjs';
import { createHash } from 'node:crypto';

/** Builds reports; the demo defers these to run a little later. */
@Injectable()
export class ReportService {
  @Task()
  generate(reportId: string, rows: number): { reportId: string; digest: string } {
    const hash = createHash('sha256');
    for (let i = 0; i < rows; i++) hash.update(`${reportId}:${i}`);
    return { reportId, digest: hash.digest('hex').slice(0, 16) };
  }
}
