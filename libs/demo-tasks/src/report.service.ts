import { Injectable } from '@nestjs/common';
import { Task } from '@threadmill/nestjs';
import { createHash } from 'node:crypto';
import { GenerateReport } from './contracts.js';

/** Builds reports; the demo defers these to run a little later. */
@Injectable()
export class ReportService {
  @Task(GenerateReport)
  generate(reportId: string, rows: number): { reportId: string; digest: string } {
    const hash = createHash('sha256');
    for (let i = 0; i < rows; i++) hash.update(`${reportId}:${i}`);
    return { reportId, digest: hash.digest('hex').slice(0, 16) };
  }
}
