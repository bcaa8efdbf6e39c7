// A handler: a run of the pattern's name, through Nest's pipes.
import { Controller, ValidationPipe } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { IsString, MinLength } from 'class-validator';

export class ShoutDto {
  @IsString()
  @MinLength(1)
  text!: string;
}

@Controller()
export class GreetingsController {
  @MessagePattern('greetings.shout', { queue: 'default' })
  shout(@Payload(new ValidationPipe()) request: ShoutDto): string {
    return `${request.text.toUpperCase()}!`;
  }
}
