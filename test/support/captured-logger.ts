import type { LoggerService } from '@nestjs/common';

/** A Nest logger that keeps what is logged, for asserting warnings. */
export class CapturedLogger implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];

  log(message: unknown): void {
    this.lines.push({ level: 'log', message: String(message) });
  }

  warn(message: unknown): void {
    this.lines.push({ level: 'warn', message: String(message) });
  }

  error(message: unknown): void {
    this.lines.push({ level: 'error', message: String(message) });
  }

  warnings(): string[] {
    return this.lines.filter((line) => line.level === 'warn').map((line) => line.message);
  }
}
