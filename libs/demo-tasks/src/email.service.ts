import { Injectable } from '@nestjs/common';
import { ExponentialBackoff, Task } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { SendWelcome } from './contracts.js';

/** Sends transactional emails (simulated: a few ms of I/O). */
@Injectable()
export class EmailService {
  @Task(SendWelcome, { retry: new ExponentialBackoff({ baseDelayMs: 200, maxRetries: 3 }) })
  async sendWelcome(userId: number, email: string): Promise<{ messageId: string }> {
    await delay(1 + (userId % 4));
    return { messageId: `msg-${userId}-${email.length}` };
  }
}
