import { Module } from '@nestjs/common';
import { GreetService } from './greet.service.js';
import { GreetingsController } from './greetings.controller.js';

@Module({ providers: [GreetService], controllers: [GreetingsController] })
export class GreetingsModule {}
