// A task whose argument is a DTO, validated with the app's class-validator (which must be the library's too).
import { Injectable } from '@nestjs/common';
import { Task } from '@threadmill/nestjs';
import { IsString, MinLength } from 'class-validator';

export class GreetingDto {
  @IsString()
  @MinLength(2)
  greeting!: string;
}

@Injectable()
export class GreetService {
  @Task()
  greet(name: string, dto: GreetingDto): string {
    return `${dto.greeting}, ${name} (${dto instanceof GreetingDto ? 'a GreetingDto' : 'a plain object'})`;
  }
}
