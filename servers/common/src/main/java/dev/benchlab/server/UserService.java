package dev.benchlab.server;

import org.springframework.stereotype.Service;

@Service
public class UserService {
    /** Called through reflection by /reflect, as the published JMeter test's controller did. */
    public String describe(User user) {
        return "User{id=" + user.id() + ", uid=" + user.uid() + ", name=" + user.name()
                + ", age=" + user.age() + ", school=" + user.school() + "}";
    }
}
