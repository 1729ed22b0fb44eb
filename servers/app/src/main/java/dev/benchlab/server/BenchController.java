package dev.benchlab.server;

import java.util.Map;

import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** One source of servlet endpoints for Tomcat, Jetty and Undertow, so the only difference between the jars is the server. */
@RestController
public class BenchController {

    private final UserService service;
    private final WebServerApplicationContext context;
    private final Environment environment;

    public BenchController(UserService service, WebServerApplicationContext context, Environment environment) {
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

    @GetMapping(value = "/reflect", produces = MediaType.TEXT_PLAIN_VALUE)
    public String reflect() throws ReflectiveOperationException {
        return Responses.reflect(service);
    }

    /** Holds the request's thread for ms: the servlet model, where a waiting request keeps its thread. */
    @GetMapping(value = "/sleep", produces = MediaType.TEXT_PLAIN_VALUE)
    public String sleep(@RequestParam(defaultValue = "" + Responses.SLEEP_MS) long ms) throws InterruptedException {
        Thread.sleep(ms);
        return Responses.slept(ms);
    }

    @PostMapping(value = "/echo", produces = MediaType.APPLICATION_OCTET_STREAM_VALUE)
    public byte[] echo(@RequestBody(required = false) byte[] body) {
        return Responses.echo(body);
    }

    @GetMapping("/info")
    public Map<String, Object> info() {
        return RuntimeFacts.describe(context.getWebServer(), environment, ServletPool.of(context.getWebServer()));
    }
}
