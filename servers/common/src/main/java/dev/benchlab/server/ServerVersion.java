package dev.benchlab.server;

import java.lang.reflect.Field;
import java.lang.reflect.Method;

import org.springframework.boot.web.server.WebServer;

/**
 * Names the embedded server and its exact version. Reflection keeps the shared code free of any
 * compile-time dependency on a particular server.
 */
final class ServerVersion {
    private ServerVersion() {
    }

    /** {name, version} of the server behind {@code webServer}, told apart by Spring's class for it. */
    static String[] detect(WebServer webServer) {
        String type = webServer.getClass().getSimpleName();
        if (type.startsWith("Tomcat")) {
            String tomcat = call("org.apache.catalina.util.ServerInfo", "getServerInfo");
            return new String[] {"tomcat", tomcat != null && tomcat.contains("/") ? tomcat.substring(tomcat.indexOf('/') + 1) : tomcat};
        }
        if (type.startsWith("Jetty")) {
            return new String[] {"jetty", field("org.eclipse.jetty.util.Jetty", "VERSION")};
        }
        if (type.startsWith("Undertow")) {
            return new String[] {"undertow", call("io.undertow.Version", "getVersionString")};
        }
        if (type.startsWith("Netty")) {
            // Reactor Netty's version: it is the HTTP server; Netty below it is its transport.
            return new String[] {"netty", implementation("reactor.netty.http.server.HttpServer")};
        }
        return new String[] {"unknown", "unknown"};
    }

    private static String call(String className, String method) {
        try {
            Method m = Class.forName(className).getMethod(method);
            return String.valueOf(m.invoke(null));
        } catch (ReflectiveOperationException | LinkageError e) {
            return null;
        }
    }

    private static String field(String className, String name) {
        try {
            Field f = Class.forName(className).getField(name);
            return String.valueOf(f.get(null));
        } catch (ReflectiveOperationException | LinkageError e) {
            return null;
        }
    }

    /** The Implementation-Version in the manifest of the jar that holds {@code className}. */
    private static String implementation(String className) {
        try {
            return Class.forName(className).getPackage().getImplementationVersion();
        } catch (ReflectiveOperationException | LinkageError e) {
            return null;
        }
    }
}
