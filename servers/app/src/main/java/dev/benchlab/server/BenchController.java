package dev.benchlab.server;

import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.Map;

import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** One source of endpoints for every server, so the only difference between the jars is the server. */
@RestController
public class BenchController {

    /**
     * 70 bytes: with Tomcat's headers (status line, Content-Type, Content-Length, Date) the whole
     * response is 184 bytes, the size of the published wrk run's responses.
     */
    static final String HELLO = "Hello from benchlab: one fixed body, served alike by all three servers";

    private final UserService service;
    private final WebServerApplicationContext context;

    public BenchController(UserService service, WebServerApplicationContext context) {
        this.service = service;
        this.context = context;
    }

    @GetMapping(value = "/hello", produces = MediaType.TEXT_PLAIN_VALUE)
    public String hello() {
        return HELLO;
    }

    @GetMapping("/json")
    public User json() {
        return newUser();
    }

    @GetMapping(value = "/reflect", produces = MediaType.TEXT_PLAIN_VALUE)
    public String reflect() throws Exception {
        Method describe = UserService.class.getMethod("describe", User.class);
        String text = (String) describe.invoke(service, newUser());
        System.out.println(text);
        return text;
    }

    @GetMapping(value = "/sleep", produces = MediaType.TEXT_PLAIN_VALUE)
    public String sleep(@RequestParam(defaultValue = "10") long ms) throws InterruptedException {
        Thread.sleep(ms);
        return "slept " + ms + " ms";
    }

    @PostMapping(value = "/echo", produces = MediaType.APPLICATION_OCTET_STREAM_VALUE)
    public byte[] echo(@RequestBody(required = false) byte[] body) {
        return body == null ? new byte[0] : body;
    }

    @GetMapping("/info")
    public Map<String, String> info() {
        Map<String, String> info = new LinkedHashMap<>();
        String[] server = ServerVersion.detect();
        info.put("server", server[0]);
        info.put("server_version", server[1]);
        info.put("web_server_class", context.getWebServer().getClass().getSimpleName());
        info.put("spring_boot_version", SpringBootVersion.getVersion());
        info.put("java_version", System.getProperty("java.version"));
        info.put("java_vendor", System.getProperty("java.vendor"));
        info.put("java_vm", System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version"));
        info.put("available_processors", Integer.toString(Runtime.getRuntime().availableProcessors()));
        info.put("max_heap_bytes", Long.toString(Runtime.getRuntime().maxMemory()));
        info.put("virtual_threads", System.getProperty("spring.threads.virtual.enabled", "false"));
        return info;
    }

    private static User newUser() {
        return new User(1L, "5f2b6c1e-8d3a-4e7b-9c21-0a6d4f3b2e19", "benchlab", 20, "Spring Boot University");
    }
}
