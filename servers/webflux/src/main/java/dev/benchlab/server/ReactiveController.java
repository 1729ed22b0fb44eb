package dev.benchlab.server;

import java.time.Duration;
import java.util.Map;

import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.MultithreadEventExecutorGroup;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;
import reactor.netty.Connection;

/**
 * The servlet jars' endpoints on Spring WebFlux and Reactor Netty, with the same bodies (from
 * {@link Responses}). Every handler runs on a Netty event loop, so none may block it.
 */
@RestController
public class ReactiveController {

    private final UserService service;
    private final WebServerApplicationContext context;
    private final Environment environment;

    public ReactiveController(UserService service, WebServerApplicationContext context, Environment environment) {
        this.service = service;
        this.context = context;
        this.environment = environment;
    }

    @GetMapping(value = "/hello", produces = MediaType.TEXT_PLAIN_VALUE)
    public String hello() {
        return Responses.HELLO;
    }

    @GetMapping("/json")
    public User json() {
        return Responses.user();
    }

    /** The same reflective call and the same line printed as on the servlet servers, on the event loop. */
    @GetMapping(value = "/reflect", produces = MediaType.TEXT_PLAIN_VALUE)
    public String reflect() throws ReflectiveOperationException {
        return Responses.reflect(service);
    }

    /**
     * Waits ms without holding a thread: Mono.delay schedules the answer on Reactor's timer, and the
     * event loop serves other connections meanwhile. A Thread.sleep here would stall every connection
     * on this loop, which is not how a reactive server is meant to wait.
     */
    @GetMapping(value = "/sleep", produces = MediaType.TEXT_PLAIN_VALUE)
    public Mono<String> sleep(@RequestParam(defaultValue = "" + Responses.SLEEP_MS) long ms) {
        return Mono.delay(Duration.ofMillis(ms)).map(tick -> Responses.slept(ms));
    }

    @PostMapping(value = "/echo", produces = MediaType.APPLICATION_OCTET_STREAM_VALUE)
    public Mono<byte[]> echo(@RequestBody(required = false) Mono<byte[]> body) {
        return body.defaultIfEmpty(new byte[0]).map(Responses::echo);
    }

    @GetMapping("/info")
    public Map<String, Object> info(ServerWebExchange exchange) {
        return RuntimeFacts.describe(context.getWebServer(), environment, eventLoops(exchange));
    }

    /**
     * The event loop group serving this very connection, and its number of loops. With
     * spring.threads.virtual.enabled, Boot runs the handlers whose return type is not reactive (all but
     * sleep and echo here) on virtual threads instead, which /info's "virtual" and "thread_name" show.
     */
    private static Pool eventLoops(ServerWebExchange exchange) {
        Object request = ServerHttpRequestDecorator.getNativeRequest(exchange.getRequest());
        if (!(request instanceof Connection connection)) {
            return Pool.UNKNOWN;
        }
        EventLoopGroup group = connection.channel().eventLoop().parent();
        int loops = 0;
        if (group instanceof MultithreadEventExecutorGroup multi) {
            loops = multi.executorCount();
        } else {
            for (EventExecutor ignored : group) {
                loops++;
            }
        }
        return new Pool(group.getClass().getName(), loops);
    }
}
