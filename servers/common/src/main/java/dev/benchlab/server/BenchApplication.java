package dev.benchlab.server;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The application under test. Which embedded server it runs on is decided by the jar's classpath alone. */
@SpringBootApplication
public class BenchApplication {
    public static void main(String[] args) {
        SpringApplication.run(BenchApplication.class, args);
    }
}
